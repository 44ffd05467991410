import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { postgresGroup } from './group';
import { postgresDialect } from './dialect';

registerDialect(['postgres'], postgresDialect);
registerParts(postgresDialect, {
  name: 'postgres',
  group: postgresGroup,
});
