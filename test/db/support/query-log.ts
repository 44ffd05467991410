import type { Logger } from 'typeorm';

/** A TypeORM logger that records every statement, to tell whether DDL ran and on which tables. */
export class QueryLog implements Logger {
  readonly statements: string[] = [];

  logQuery(query: string): void {
    this.statements.push(query);
  }
  logQueryError(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}

  /** CREATE / ALTER / DROP / RENAME / TRUNCATE statements recorded so far. */
  ddl(): string[] {
    return this.statements.filter((statement) => /^\s*(CREATE|ALTER|DROP|RENAME|TRUNCATE)\b/i.test(statement));
  }

  clear(): void {
    this.statements.length = 0;
  }
}
