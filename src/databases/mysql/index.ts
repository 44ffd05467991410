import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { mysqlDemoLedger } from './demo-ledger';
import { mysqlDdl } from './ddl';
import { mysqlGroup } from './group';
import { mysqlDialect } from './dialect';
import { mysqlPrune } from './prune';
import { mysqlSchema } from './schema';
import { MYSQL_TYPES, mysqlSetup } from './setup';

registerDialect(MYSQL_TYPES, mysqlDialect);
registerParts(mysqlDialect, {
  name: 'mysql',
  setup: mysqlSetup,
  ddl: mysqlDdl,
  schema: mysqlSchema,
  prune: mysqlPrune,
  demoLedger: mysqlDemoLedger,
  group: mysqlGroup,
});
