import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { postgresDialect } from './dialect';
import { postgresElect } from './elect';
import { subscribeToLeaseChanges } from './listener';

registerDialect(['postgres'], postgresDialect);
registerParts(postgresDialect, {
  name: 'postgres',
  elect: postgresElect,
  notifications: { subscribe: subscribeToLeaseChanges },
});
