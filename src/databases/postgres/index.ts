import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { registerTarget } from '../targets';
import { postgresSession } from './connection';
import { postgresTarget } from './url';
import { postgresDialect } from './dialect';

registerDialect(['postgres'], postgresDialect);
registerParts(postgresDialect, {
  name: 'postgres',
  session: postgresSession,
});
registerTarget(postgresTarget);
