/**
 * Differential testing on MariaDB: every path of the library against the reference model (see
 * harness.ts), with the server's default session settings, and with settings an application may
 * give its connections (the library must decide alike whatever they are).
 */
import { describeEachDatabase } from '../support/databases';
import { differentialSuite } from './suite';

describeEachDatabase('differential', (db) => differentialSuite(db, { sequentialRuns: 350, concurrentRuns: 120, loopRuns: 4 }), { kinds: ['mariadb'] });

// Leaders calling again and again: one process, the two paths of elect without a caller's
// transaction, each call repeated as an elector's ticks repeat it, so that the one-statement
// renewal (databases/mysql/renew.ts) is taken often and compared with the model, beside races,
// hold rounds and fenced transactions.
describeEachDatabase(
  'differential, leader renewals',
  (db) => differentialSuite(db, { sequentialRuns: 300, concurrentRuns: 60, caps: { processes: 1, electPaths: ['plain', 'idle'], electAgain: true }, minOneStatementRenewals: 100 }),
  { kinds: ['mariadb'] },
);

describeEachDatabase(
  'differential, sql_mode NO_BACKSLASH_ESCAPES',
  (db) =>
    differentialSuite(db, {
      sequentialRuns: 200,
      concurrentRuns: 0,
      settings: ["SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',NO_BACKSLASH_ESCAPES')"],
      caps: { hostile: 'always' },
      defect: 5,
    }),
  { kinds: ['mariadb'] },
);

describeEachDatabase(
  'differential, autocommit=0',
  (db) => differentialSuite(db, { sequentialRuns: 200, concurrentRuns: 20, settings: ['SET SESSION autocommit = 0'], defect: 3 }),
  { kinds: ['mariadb'] },
);
