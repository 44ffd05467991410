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
 * `scheme://user:password@`: the password runs to the URL's LAST `@`, since an unencoded one may
 * hold `/ ? # @` (a URL parser would split it there and show the rest as host or path). A query
 * or path with an `@` of its own is hidden with it: a message then shows less, never a secret.
 */
const USER_INFO = /^([a-z][a-z0-9+.-]*:\/\/[^:@/?#]*):(.*)@/is;
/** A `password=` query parameter, to the next `&` (an unencoded `#` does not end it). */
const PASSWORD_PARAMETER = /([?&]password=)([^&]*)/gi;

/**
 * The URL with its password replaced by {@link REDACTED_PASSWORD}, for messages: the user name
 * stays (it tells the operator which account was used), and so does everything else. Covers
 * `scheme://user:password@host` (also a password with unencoded `/ ? # @` in it) and a
 * `password=` query parameter.
 */
export function redactUrl(url: string, placeholder = REDACTED_PASSWORD): string {
  return url
    .replace(USER_INFO, (_match, head: string) => `${head}:${placeholder}@`)
    .replace(PASSWORD_PARAMETER, (_match, head: string) => `${head}${placeholder}`);
}

/** The passwords a URL carries (user info and `password=` parameters), as written. */
function passwordsOf(url: string): string[] {
  const passwords = [USER_INFO.exec(url)?.[2], ...[...url.matchAll(PASSWORD_PARAMETER)].map((match) => match[2])];
  return passwords.filter((password): password is string => password !== undefined && password !== '');
}

/** `text` as written, percent-decoded and percent-encoded: the forms a driver may repeat. */
function formsOf(text: string): string[] {
  let decoded = text;
  try {
    decoded = decodeURIComponent(text);
  } catch {
    // Not valid percent-encoding: only the other forms can appear.
  }
  return [...new Set([text, decoded, encodeURIComponent(text)])];
}

/**
 * `text` (a message, e.g. a driver's error about `url`) with `url` and its password hidden
 * wherever they appear: the URL as {@link redactUrl} shows it, the password in every form.
 */
export function redactIn(text: string, url: string, placeholder = REDACTED_PASSWORD): string {
  let redacted = text.split(url).join(redactUrl(url, placeholder));
  // Longest first, so that a form containing another is replaced whole.
  const secrets = passwordsOf(url).flatMap(formsOf).sort((a, b) => b.length - a.length);
  for (const secret of secrets) redacted = redacted.split(secret).join(placeholder);
  return redacted;
}

/** True when the URL carries a password (in the user info or as a `password=` query parameter). */
export function urlHasPassword(url: string): boolean {
  return redactUrl(url, '\u0000') !== url;
}
