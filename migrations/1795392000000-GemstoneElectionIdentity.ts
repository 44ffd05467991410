import type { MigrationInterface, QueryRunner } from 'typeorm';
import { contextOf } from '../src/db/context';
import { render, SqlFragment } from '../src/db/sql';
import {
  DDL_LOCK_TIMEOUT_MS,
  identityColumnsMissing,
  identityColumnsPresent,
  identityDropStatements,
  identityStatementsOf,
} from '../src/election/schema';
import { partsOf } from '../src/databases/parts';

async function run(queryRunner: QueryRunner, statements: SqlFragment[]): Promise<void> {
  const { dialect } = contextOf(queryRunner.connection);
  for (const statement of statements) {
    const { text, values } = render(statement, dialect.placeholders);
    await queryRunner.query(text, [...values]);
  }
}

/**
 * 0.2.0: candidate `metadata`, `priority` and `eligible` (with defaults that fill existing rows)
 * and the `gemstone_election_history` table — the same statements `initDb` runs. Idempotent: it
 * adds only the columns that are missing, so it may run after `initDb` already upgraded the
 * tables, and processes of 0.1.0 keep electing on the tables while and after it runs (their
 * statements name their columns and never see the new ones).
 *
 * On PostgreSQL the ALTER waits at most `DDL_LOCK_TIMEOUT_MS` for the candidate table's lock
 * (the session's `lock_timeout` is restored afterwards): a longer wait would queue every election
 * behind it. If it times out the migration fails and can simply be run again.
 */
export class GemstoneElectionIdentity1795392000000 implements MigrationInterface {
  readonly name = 'GemstoneElectionIdentity1795392000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const context = contextOf(queryRunner.connection);
    const { schema } = partsOf(context);
    const flavor = await schema.flavorOf(queryRunner);
    const missing = await identityColumnsMissing(context, queryRunner);
    const statements = identityStatementsOf(schema, context, missing, flavor);
    if (missing.length === 0) await run(queryRunner, statements);
    else await schema.withDdlLockTimeout(queryRunner, DDL_LOCK_TIMEOUT_MS, () => run(queryRunner, statements));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const context = contextOf(queryRunner.connection);
    const present = await identityColumnsPresent(context, queryRunner);
    await run(queryRunner, identityDropStatements(context.dialect.name, context, present));
  }
}
