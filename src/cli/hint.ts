import { redactUrl, urlHasPassword } from '../db/url';

/** Stands for the password in a command the CLI suggests: visible, and not a working password. */
export const PASSWORD_PLACEHOLDER = '<password>';

/** Where the tables live besides the URL: the table options of `status`/`init`. */
export interface TableNames {
  readonly schema?: string;
  readonly entityPrefix?: string;
}

/** A shell word: as is when it is plainly safe, else in single quotes. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The `gemstone-election init` command for the same database, in backquotes, ready to copy.
 * It always names the URL: run without `--url` (and without `GEMSTONE_DB_URL`/`DATABASE_URL`), `init` would
 * create `gemstone.sqlite` in the working directory instead. A password never appears: it is
 * replaced by {@link PASSWORD_PLACEHOLDER}, and the hint says so.
 */
export function initHint(url: string, names: TableNames = {}): string {
  const words = ['gemstone-election', 'init', '--url', shellWord(redactUrl(url, PASSWORD_PLACEHOLDER))];
  if (names.schema !== undefined) words.push('--schema', shellWord(names.schema));
  if (names.entityPrefix !== undefined) words.push('--entity-prefix', shellWord(names.entityPrefix));
  const command = `\`${words.join(' ')}\``;
  return urlHasPassword(url) ? `${command}, with the password in place of ${PASSWORD_PLACEHOLDER}` : command;
}
