import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { mysqlDialect } from './dialect';

registerDialect(['mysql', 'mariadb'], mysqlDialect);
registerParts(mysqlDialect, {
  name: 'mysql',
});
