import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { sqliteDemoLedger } from './demo-ledger';
import { sqliteDdl } from './ddl';
import { sqliteGroup } from './group';
import { registerTarget } from '../targets';
import { sqliteSession } from './connection';
import { sqliteTarget } from './url';
import { sqliteDialect } from './dialect';
import { sqlitePrune } from './prune';
import { sqliteSchema } from './schema';
import { SQLITE_TYPES, sqliteSetup } from './setup';
import { sqliteElect } from './elect';
import { sqlitePrograms } from './programs';
import { sqliteRunPrograms } from './run-programs';
import { sqliteGuards } from './guard';

registerDialect(SQLITE_TYPES, sqliteDialect);
registerParts(sqliteDialect, {
  name: 'sqlite',
  setup: sqliteSetup,
  ddl: sqliteDdl,
  schema: sqliteSchema,
  prune: sqlitePrune,
  demoLedger: sqliteDemoLedger,
  group: sqliteGroup,
  session: sqliteSession,
  elect: sqliteElect,
  programs: sqlitePrograms,
  runPrograms: sqliteRunPrograms,
  guards: sqliteGuards,
});
registerTarget(sqliteTarget);
