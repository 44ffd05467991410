import type { MigrationInterface, QueryRunner } from 'typeorm';
import { contextOf } from '../src/db/context';
import { render, SqlFragment } from '../src/db/sql';
import { runDropStatements } from '../src/election/schema';
import { partsOf } from '../src/databases/parts';

async function run(queryRunner: QueryRunner, statements: SqlFragment[]): Promise<void> {
  const { dialect } = contextOf(queryRunner.connection);
  for (const statement of statements) {
    const { text, values } = render(statement, dialect.placeholders);
    await queryRunner.query(text, [...values]);
  }
}

/**
 * Schedules: the `gemstone_election_run` table of schedules (one row per schedule slot) and its
 * index — the same statements `initDb` runs. Idempotent (`CREATE … IF NOT EXISTS`): it may run
 * after `initDb` already created the table. It adds a table and touches none of the election's,
 * so processes of earlier versions keep electing while and after it runs.
 */
export class GemstoneElectionRuns1796256000000 implements MigrationInterface {
  readonly name = 'GemstoneElectionRuns1796256000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const context = contextOf(queryRunner.connection);
    const { schema } = partsOf(context);
    const flavor = await schema.flavorOf(queryRunner);
    await run(queryRunner, schema.runStatements(context, flavor));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await run(queryRunner, runDropStatements(contextOf(queryRunner.connection)));
  }
}
