/**
 * Passwords never reach a CLI message: not when they hold characters a URL parser splits at
 * (`/ ? # @`, unencoded, as operators paste them), and not when a driver's error repeats the URL.
 */
import { redactIn, redactUrl } from '../../dist/src/db/url';
import { runCli } from './cli';

/** Passwords with each character a URL parser splits at, and one with all of them. */
const PASSWORDS = ['Zk9/q2+Lw', 'Zk9?q2+Lw', 'Zk9#q2+Lw', 'Zk9@q2+Lw', 'Zk9@q2@Lw', 'a/b?c#d@e+Lw9'];

/** The password and the pieces a parser would cut it into (each long enough to recognize). */
function piecesOf(password: string): string[] {
  return [password, ...password.split(/[/?#@]/).filter((piece) => piece.length >= 2)];
}

describe('redactUrl and redactIn', () => {
  test.each(PASSWORDS)('user info password %s: hidden whole, user and host shown', (password) => {
    for (const scheme of ['postgres', 'mysql', 'mariadb']) {
      expect(redactUrl(`${scheme}://app:${password}@127.0.0.1:5432/app`)).toBe(`${scheme}://app:***@127.0.0.1:5432/app`);
    }
  });

  test('a password= query parameter with # and @ is hidden whole', () => {
    expect(redactUrl('sqlite:/tmp/x.sqlite?password=a#b@c&driver=sqlite3')).toBe('sqlite:/tmp/x.sqlite?password=***&driver=sqlite3');
  });

  test('URLs without a password are unchanged', () => {
    for (const url of ['postgres://app@127.0.0.1:5432/app', 'postgres://127.0.0.1/app', 'sqlite:gemstone.sqlite', 'mysql://app@h/db?ssl=true']) {
      expect(redactUrl(url)).toBe(url);
    }
  });

  test.each(PASSWORDS)('a message that repeats the URL or the password (%s), raw or percent-encoded, keeps neither', (password) => {
    const url = `postgres://app:${password}@127.0.0.1:5432/app`;
    const message = `Invalid URL ${url}; password ${password}, encoded ${encodeURIComponent(password)}`;
    const shown = redactIn(message, url);
    expect(shown).toBe('Invalid URL postgres://app:***@127.0.0.1:5432/app; password ***, encoded ***');
  });
});

describe('gemstone-election: a password with / ? # @ never shows', () => {
  // Port 1: nothing listens, so no server's answer depends on the password.
  test.each(PASSWORDS.flatMap((password) => ['postgres', 'mysql'].map((scheme): [string, string] => [scheme, password])))(
    '%s:// with password %s',
    async (scheme, password) => {
      const result = await runCli(['status', '--url', `${scheme}://app:${password}@127.0.0.1:1/app`]);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      for (const piece of piecesOf(password)) expect(result.stderr).not.toContain(piece);
      expect(result.stderr).toContain(`${scheme}://app:***@`);
    },
  );
});
