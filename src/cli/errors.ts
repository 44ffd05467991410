/**
 * A failure the CLI reports as one line on stderr with exit code 1 (bad URL, unreachable
 * database, missing tables). Anything else that escapes is reported the same way, but these
 * carry a message written for the operator.
 */
export class CliError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CliError';
  }
}

/** The first line of an error's message: the CLI never prints stack traces. */
export function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split('\n').find((line) => line.trim() !== '') ?? message;
  return first.trim() || (error instanceof Error ? error.name : 'unknown error');
}

/**
 * The election tables are not in the database. Thrown without knowing the URL; the command
 * that does (`status`) turns it into a {@link CliError} with the full `init` command to run.
 */
export class MissingTablesError extends CliError {
  constructor(options?: { cause?: unknown }) {
    super('the election tables are missing in this database (run `gemstone-election init` with the same --url)', options);
    this.name = 'MissingTablesError';
  }
}
