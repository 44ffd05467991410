/** Differential testing on PostgreSQL: every path of the library against the reference model (see harness.ts). */
import { describeEachDatabase } from '../support/databases';
import { differentialSuite } from './suite';

describeEachDatabase('differential', (db) => differentialSuite(db, { sequentialRuns: 350, concurrentRuns: 160, loopRuns: 4 }), { kinds: ['postgres'] });

// Leaders calling again and again: one process, the two paths of elect without a caller's
// transaction, each call repeated as an elector's ticks repeat it, so that the one-statement
// renewal (databases/postgres/renew.ts) is taken often and compared with the model, beside races,
// hold rounds and fenced transactions.
describeEachDatabase(
  'differential, leader renewals',
  (db) => differentialSuite(db, { sequentialRuns: 300, concurrentRuns: 40, caps: { processes: 1, electPaths: ['plain', 'idle'], electAgain: true }, minOneStatementRenewals: 100 }),
  { kinds: ['postgres'] },
);
