import type { MigrationInterface, QueryRunner } from 'typeorm';
import { contextOf } from '../src/db/context';
import { render, SqlFragment } from '../src/db/sql';
import { dropStatements, schemaStatements } from '../src/election/schema';
import { partsOf } from '../src/databases/parts';

async function run(queryRunner: QueryRunner, statements: SqlFragment[]): Promise<void> {
  const { dialect } = contextOf(queryRunner.connection);
  for (const statement of statements) {
    const { text, values } = render(statement, dialect.placeholders);
    await queryRunner.query(text, [...values]);
  }
}

/**
 * Creates the election tables exactly as `initDb` does (the statements are shared), for
 * deployments where DDL runs only through migrations (`initDb(ds, { createTables: false })`).
 * Idempotent: it skips tables `initDb` already created.
 */
export class GemstoneElectionTables1763683200000 implements MigrationInterface {
  readonly name = 'GemstoneElectionTables1763683200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const context = contextOf(queryRunner.connection);
    const flavor = await partsOf(context).schema.flavorOf(queryRunner);
    await run(queryRunner, schemaStatements(context.dialect.name, context, flavor));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await run(queryRunner, dropStatements(contextOf(queryRunner.connection).table));
  }
}
