import { registerDialect } from '../registry';
import { registerParts } from '../parts';
import { sqliteDialect } from './dialect';
import { sqliteElect } from './elect';
import { sqlitePrograms } from './programs';

registerDialect(['better-sqlite3', 'sqlite'], sqliteDialect);
registerParts(sqliteDialect, {
  name: 'sqlite',
  elect: sqliteElect,
  programs: sqlitePrograms,
});
