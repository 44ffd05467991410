import type { Logger } from 'typeorm';

/** A TypeORM logger that records every statement (and its parameters), to tell what a call sent. */
export class QueryLog implements Logger {
  readonly statements: string[] = [];
  /** The parameters of each statement, at the same index. */
  readonly parameters: unknown[][] = [];

  logQuery(query: string, parameters?: unknown[]): void {
    this.statements.push(query);
    this.parameters.push(parameters ?? []);
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
    this.parameters.length = 0;
  }
}
