/**
 * Differential testing on SQLite (a file and `:memory:`; better-sqlite3, and on the TypeORM 0.3
 * line the sqlite3 driver too): every path of the library against the reference model (see harness.ts).
 */
import { describeEachDatabase } from '../support/databases';
import { differentialSuite } from './suite';

describeEachDatabase('differential', (db) => differentialSuite(db, { sequentialRuns: 500, concurrentRuns: 90, loopRuns: 4 }), { kinds: ['sqlite'] });
