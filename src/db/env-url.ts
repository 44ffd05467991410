/**
 * The environment variables a default database URL is read from, in the order they win:
 * `GEMSTONE_DB_URL` (specific to this library: it can point the election at another database than
 * the application's), then `DATABASE_URL` (the application's database, the documented one).
 * Read by `initDb()` without an argument and by the CLI without `--url`.
 */
export const DATABASE_URL_VARIABLES = ['GEMSTONE_DB_URL', 'DATABASE_URL'] as const;

/** A URL read from the environment, with the variable it came from (for messages). */
export interface EnvironmentUrl {
  readonly url: string;
  readonly variable: (typeof DATABASE_URL_VARIABLES)[number];
}

/**
 * The database URL the environment names: the first of {@link DATABASE_URL_VARIABLES} set to a
 * non-blank value (a blank one counts as unset, as `${VAR:-default}` does in a shell), else
 * undefined.
 */
export function urlFromEnvironment(env: NodeJS.ProcessEnv = process.env): EnvironmentUrl | undefined {
  for (const variable of DATABASE_URL_VARIABLES) {
    const url = env[variable];
    if (url !== undefined && url.trim() !== '') return { url, variable };
  }
  return undefined;
}

/**
 * Why a given `target` (or `--url`) that is undefined, null or blank is refused, and what to do:
 * the message names the variable the application most likely read it from.
 */
export function missingTargetProblem(value: unknown): string {
  const what = value === undefined ? 'undefined' : value === null ? 'null' : 'empty';
  return (
    `is ${what}: set DATABASE_URL to the database URL (e.g. postgres://user:password@host:5432/app) and check it is set ` +
    'before passing it, or pass a DataSource. (Only initDb() called without any argument opens the embedded SQLite file ' +
    'gemstone.sqlite, which elects among the processes of one machine only.)'
  );
}
