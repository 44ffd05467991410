/**
 * What the CLI tells the operator to run, and how it shows URLs: the `init` hint names the same
 * database (run literally, it initializes that database, not a stray gemstone.sqlite), and only
 * passwords are masked, never user names.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { describeEachDatabase, query } from '../support/databases';
import { CliResult, runCli } from './cli';

const PASSWORD = 'Sup3r-secret';

function oneLineError(result: CliResult): string {
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

/** The backquoted `gemstone-election init …` command of a message, split into shell words. */
function suggestedInit(message: string): string[] {
  const command = /`(gemstone-election init[^`]*)`/.exec(message)?.[1];
  if (!command) throw new Error(`no init command in: ${message}`);
  // The hint quotes with single quotes only; this is enough to split it as a shell would.
  return [...command.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

describeEachDatabase(
  'gemstone-election: the init hint of a server database',
  (db) => {
    test('status on a database without tables suggests init with the same --url; run literally, it initializes that database', async () => {
      const withPassword = new URL(db.url());
      withPassword.password = PASSWORD; // the test server trusts local connections: any password works
      const url = withPassword.toString();
      const message = oneLineError(await runCli(['status', '--url', url]));
      expect(message).toMatch(/election tables are missing/);
      expect(message).not.toContain(PASSWORD);
      expect(message).toMatch(/with the password in place of <password>/);

      const words = suggestedInit(message);
      expect(words.slice(0, 3)).toEqual(['gemstone-election', 'init', '--url']);
      expect(words[3]).toBe(url.replace(`:${PASSWORD}@`, ':<password>@'));

      // Run it as the operator would (password filled in), from an empty directory.
      const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-hint-'));
      try {
        const args = words.slice(1).map((word) => word.replace('<password>', PASSWORD));
        const init = await runCli(args, { cwd });
        expect(init).toMatchObject({ code: 0, stderr: '' });
        expect(fs.readdirSync(cwd)).toEqual([]); // no gemstone.sqlite here
      } finally {
        fs.rmSync(cwd, { recursive: true, force: true });
      }
      const ds = await db.connect(undefined, { createTables: false });
      expect(await query(ds, 'SELECT ns FROM gemstone_election_leader')).toEqual([]);
      expect((await runCli(['status', '--url', url, '--json'])).stdout.trim()).toBe('[]');
    });

    test('without a password the hint is the plain command, with no placeholder', async () => {
      const fresh = await db.sibling();
      const message = oneLineError(await runCli(['status', '--url', fresh.url()]));
      expect(suggestedInit(message)).toEqual(['gemstone-election', 'init', '--url', fresh.url()]);
      expect(message).not.toMatch(/password/);
    });
  },
  { kinds: ['postgres'] },
);

describe('gemstone-election: URLs in messages mask the password only', () => {
  test.each([
    ['pg://alice:s3cret@127.0.0.1:5432/test', 'pg://alice:***@127.0.0.1:5432/test'],
    ['pg://alice@127.0.0.1:5432/test', 'pg://alice@127.0.0.1:5432/test'],
    ['postgre://bob:s3cret@127.0.0.1/test', 'postgre://bob:***@127.0.0.1/test'],
  ])('a bad URL %s is shown as %s', async (url, shown) => {
    const message = oneLineError(await runCli(['status', '--url', url]));
    expect(message).toContain(JSON.stringify(shown));
    expect(message).not.toContain('s3cret');
  });

  test.each(['postgres', 'postgresql'])('%s:// with an unknown user: the user stays visible, the password does not', async (scheme) => {
    const message = oneLineError(await runCli(['status', '--url', `${scheme}://alice_nobody:s3cret@127.0.0.1:5432/test`]));
    expect(message).toContain(`${scheme}://alice_nobody:***@127.0.0.1:5432/test`);
    expect(message).not.toContain('s3cret');
  });

  test('a password= query parameter is masked too', async () => {
    const message = oneLineError(await runCli(['status', '--url', 'sqlite:/nonexistent-dir/x.sqlite?password=s3cret']));
    expect(message).not.toContain('s3cret');
  });
});
