import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { registerTarget } from '../targets';
import { mysqlSession } from './connection';
import { mysqlTarget } from './url';
import { mysqlDialect } from './dialect';

registerDialect(['mysql', 'mariadb'], mysqlDialect);
registerParts(mysqlDialect, {
  name: 'mysql',
  session: mysqlSession,
});
registerTarget(mysqlTarget);
