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
