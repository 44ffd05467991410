import { registerConnectionAdopter, registerDialect } from '../registry';
import { registerParts } from '../parts';
import { postgresDemoLedger } from './demo-ledger';
import { postgresDdl } from './ddl';
import { postgresGroup } from './group';
import { registerTarget } from '../targets';
import { postgresReads } from './reads';
import { postgresSession } from './connection';
import { postgresTarget } from './url';
import { postgresDialect } from './dialect';
import { postgresPrune } from './prune';
import { postgresSchema } from './schema';
import { POSTGRES_TYPES, postgresSetup } from './setup';
import { postgresElect } from './elect';
import { subscribeToLeaseChanges } from './listener';
import { guardPoolErrors } from './pool-errors';
import { postgresGuards } from './guard';

registerDialect(POSTGRES_TYPES, postgresDialect);
registerConnectionAdopter(POSTGRES_TYPES, guardPoolErrors);
registerParts(postgresDialect, {
  name: 'postgres',
  setup: postgresSetup,
  ddl: postgresDdl,
  schema: postgresSchema,
  prune: postgresPrune,
  demoLedger: postgresDemoLedger,
  group: postgresGroup,
  session: postgresSession,
  elect: postgresElect,
  notifications: { subscribe: subscribeToLeaseChanges },
  cancellableReads: postgresReads,
  guards: postgresGuards,
});
registerTarget(postgresTarget);
