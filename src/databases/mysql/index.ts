import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { mysqlDemoLedger } from './demo-ledger';
import { mysqlDdl } from './ddl';
import { mysqlGroup } from './group';
import { registerTarget } from '../targets';
import { mysqlReads } from './reads';
import { mysqlSession } from './connection';
import { mysqlTarget } from './url';
import { mysqlDialect } from './dialect';
import { mysqlPrune } from './prune';
import { mysqlSchema } from './schema';
import { MYSQL_TYPES, mysqlSetup } from './setup';
import { mysqlElect } from './elect';
import { mysqlGuards } from './guard';

registerDialect(MYSQL_TYPES, mysqlDialect);
registerParts(mysqlDialect, {
  name: 'mysql',
  setup: mysqlSetup,
  ddl: mysqlDdl,
  schema: mysqlSchema,
  prune: mysqlPrune,
  demoLedger: mysqlDemoLedger,
  group: mysqlGroup,
  session: mysqlSession,
  elect: mysqlElect,
  cancellableReads: mysqlReads,
  guards: mysqlGuards,
});
registerTarget(mysqlTarget);
