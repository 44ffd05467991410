import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { postgresDialect } from './dialect';

registerDialect(['postgres'], postgresDialect);
registerParts(postgresDialect, {
  name: 'postgres',
});
