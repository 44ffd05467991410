import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { mysqlDialect } from './dialect';
import { mysqlElect } from './elect';

registerDialect(['mysql', 'mariadb'], mysqlDialect);
registerParts(mysqlDialect, {
  name: 'mysql',
  elect: mysqlElect,
});
