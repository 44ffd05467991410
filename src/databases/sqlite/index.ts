import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { registerTarget } from '../targets';
import { sqliteSession } from './connection';
import { sqliteTarget } from './url';
import { sqliteDialect } from './dialect';

registerDialect(['better-sqlite3', 'sqlite'], sqliteDialect);
registerParts(sqliteDialect, {
  name: 'sqlite',
  session: sqliteSession,
});
registerTarget(sqliteTarget);
