import type { DataSourceOptions } from 'typeorm';
import { ValidationError } from '../errors';
// The database folders register their URL targets (see src/databases/targets.ts): this module is
// also loaded on its own (test fixtures require it directly).
import '../databases';
import { allTargets, targetOfScheme } from '../databases/targets';

/** The embedded default when neither a target nor `GEMSTONE_DB_URL` is given. */
export const DEFAULT_DB_URL = 'sqlite:gemstone.sqlite';

export { DEFAULT_SQLITE_BUSY_TIMEOUT_MS } from './defaults';

/**
 * DataSourceOptions for a database URL:
 * `postgres://…`, `postgresql://…`, `mysql://…`, `mariadb://…`, `sqlite:<path>`, `sqlite::memory:`.
 * A SQLite URL may end in `?driver=sqlite3` or `?driver=better-sqlite3`. Each scheme is parsed by
 * its database's registered target (`src/databases/<db>/url.ts`).
 */
export function optionsFromUrl(url: string, parameter = 'target'): DataSourceOptions {
  if (typeof url !== 'string' || url.trim() === '') throw new ValidationError(parameter, 'must be a non-empty database URL');
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  const target = targetOfScheme(scheme);
  if (target) return target.optionsFromUrl(url, scheme!, parameter);
  const accepted = allTargets().flatMap((t) => t.shownAs);
  throw new ValidationError(
    parameter,
    `must be a ${accepted.slice(0, -1).join(', ')} or ${accepted[accepted.length - 1]} URL (got ${JSON.stringify(redactUrl(url))})`,
  );
}

/** What {@link redactUrl} puts in place of a password. */
export const REDACTED_PASSWORD = '***';

/**
 * The URL with its password replaced by {@link REDACTED_PASSWORD}, for messages: the user name
 * stays (it tells the operator which account was used), and so does everything else. Covers
 * `scheme://user:password@host` and a `password=` query parameter.
 */
export function redactUrl(url: string, placeholder = REDACTED_PASSWORD): string {
  return url
    .replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/?#]*):[^@/?#]*@/i, (_match, head: string) => `${head}:${placeholder}@`)
    .replace(/([?&]password=)[^&#]*/gi, (_match, head: string) => `${head}${placeholder}`);
}

/** True when the URL carries a password (in the user info or as a `password=` query parameter). */
export function urlHasPassword(url: string): boolean {
  return redactUrl(url, '\u0000') !== url;
}
