/** Differential testing on PostgreSQL: every path of the library against the reference model (see harness.ts). */
import { describeEachDatabase } from '../support/databases';
import { differentialSuite } from './suite';

describeEachDatabase('differential', (db) => differentialSuite(db, { sequentialRuns: 500, concurrentRuns: 160, loopRuns: 4 }), { kinds: ['postgres'] });
