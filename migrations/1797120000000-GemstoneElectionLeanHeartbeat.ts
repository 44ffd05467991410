import type { MigrationInterface, QueryRunner } from 'typeorm';
import { contextOf } from '../src/db/context';
import { render, SqlFragment } from '../src/db/sql';
import { DDL_LOCK_TIMEOUT_MS, leanHeartbeatStatements, leanHeartbeatUndoStatements } from '../src/election/schema';
import { partsOf } from '../src/databases/parts';

async function run(queryRunner: QueryRunner, statements: SqlFragment[]): Promise<void> {
  const { dialect } = contextOf(queryRunner.connection);
  for (const statement of statements) {
    const { text, values } = render(statement, dialect.placeholders);
    await queryRunner.query(text, [...values]);
  }
}

/**
 * Heartbeats that touch no index — the same statements `initDb` runs. A heartbeat rewrites the
 * candidate's `expires_at`, which the first migration's `(ns, expires_at)` index holds, so every
 * heartbeat wrote index entries (on PostgreSQL, a new entry in every index of the table, the
 * primary key's too, and dead ones for the next lookup to step over). The index goes; every read
 * of one namespace's candidates finds them by the primary key's `ns` prefix. On PostgreSQL each
 * page of the candidate and leader tables also keeps room (`fillfactor`) for the next version of
 * its rows, so that heartbeats and renewals are HOT updates.
 *
 * Idempotent: it changes only what is still to change, so it may run after `initDb` did.
 * Processes of earlier versions keep electing while and after it runs (no statement of theirs
 * names the index). Its locks: PostgreSQL's DROP INDEX takes the candidate table's lock for a
 * moment, waiting at most `DDL_LOCK_TIMEOUT_MS` for it behind running elections (the session's
 * `lock_timeout`, restored afterwards; if it times out the migration fails and can simply be run
 * again), and `SET (fillfactor)` a lock that reads and writes do not wait for; it runs inside the
 * migration's transaction, so it is no `DROP INDEX CONCURRENTLY`, which TypeORM's default
 * transaction mode (`all`) cannot run. InnoDB drops a secondary index in place, without copying
 * the table; SQLite drops it in the migration's transaction.
 */
export class GemstoneElectionLeanHeartbeat1797120000000 implements MigrationInterface {
  readonly name = 'GemstoneElectionLeanHeartbeat1797120000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const context = contextOf(queryRunner.connection);
    const statements = await leanHeartbeatStatements(context, queryRunner);
    if (statements.length === 0) return;
    await partsOf(context).schema.withDdlLockTimeout(queryRunner, DDL_LOCK_TIMEOUT_MS, () => run(queryRunner, statements));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const context = contextOf(queryRunner.connection);
    await run(queryRunner, await leanHeartbeatUndoStatements(context, queryRunner));
  }
}
