import { registerDialect } from '../registry';
import { postgresDialect } from './dialect';

registerDialect(['postgres'], postgresDialect);
