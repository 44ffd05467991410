import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { mysqlGroup } from './group';
import { mysqlDialect } from './dialect';

registerDialect(['mysql', 'mariadb'], mysqlDialect);
registerParts(mysqlDialect, {
  name: 'mysql',
  group: mysqlGroup,
});
