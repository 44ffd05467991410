import { registerDialect } from '../registry';
import { sqliteDialect } from './dialect';

registerDialect(['better-sqlite3', 'sqlite'], sqliteDialect);
