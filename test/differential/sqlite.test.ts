/**
 * Differential testing on SQLite (a file and `:memory:`; better-sqlite3 on TypeORM 1.x, the sqlite3
 * driver on the TypeORM 0.3 line): every path of the library against the reference model (see harness.ts).
 */
import { describeEachDatabase } from '../support/databases';
import { differentialSuite } from './suite';

// On the TypeORM 0.3 line the sqlite3 databases only: better-sqlite3 runs the same statements and
// programs on 1.x (npm test), and the library drives it directly, not through the TypeORM line
// (its transactions on 0.3 are checked by the defects replays and the election tests there).
describeEachDatabase('differential', (db) => differentialSuite(db, { sequentialRuns: 350, concurrentRuns: 90, loopRuns: 4 }), { kinds: ['sqlite'], lineOnlyDrivers: true });
