import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { sqliteGroup } from './group';
import { sqliteDialect } from './dialect';

registerDialect(['better-sqlite3', 'sqlite'], sqliteDialect);
registerParts(sqliteDialect, {
  name: 'sqlite',
  group: sqliteGroup,
});
