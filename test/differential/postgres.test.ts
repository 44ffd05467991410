/** Differential testing on PostgreSQL: every path of the library against the reference model (see harness.ts). */
import { describeEachDatabase } from '../support/databases';
import { differentialSuite } from './suite';

describeEachDatabase('differential', (db) => differentialSuite(db, { sequentialRuns: 2000, concurrentRuns: 80 }), { kinds: ['postgres'] });
