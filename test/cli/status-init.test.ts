/**
 * `gemstone-election status` and `init` as real child processes, on SQLite (file) and PostgreSQL:
 * output parsed, exit codes checked, including the one-line errors.
 */
import * as os from 'os';
import * as fs from 'fs';
import * as path from 'path';
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { CliResult, finished, runCli, startCli } from './cli';

interface StatusRow {
  ns: string;
  leaderId: string | null;
  term: number | null;
  leaseLeftMs: number | null;
  candidates: string[];
  candidateDetails: Array<{
    candidateId: string;
    leader: boolean;
    priority: number;
    eligible: boolean;
    metadata: Record<string, unknown> | null;
    expiresInMs: number | null;
  }>;
}

function json(result: CliResult): StatusRow[] {
  expect(result).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(result.stdout) as StatusRow[];
}

/** A failure: exit code 1 and exactly one line on stderr, nothing on stdout. */
function expectOneLineError(result: CliResult, pattern: RegExp): void {
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^gemstone-election: /);
  expect(lines[0]).toMatch(pattern);
}

function sqliteFile(url: string): string {
  return url.slice('sqlite:'.length).split('?')[0]!;
}

describeEachDatabase(
  'gemstone-election status and init',
  (db) => {
    let ds: DataSource;

    test('status on a database without the election tables: one-line error, exit 1', async () => {
      if (db.kind === 'sqlite') {
        const file = sqliteFile(db.url());
        // No file at all: refused without creating one.
        expectOneLineError(await runCli(['status', '--url', db.url()]), /does not exist.*gemstone-election init/);
        expect(fs.existsSync(file)).toBe(false);
        fs.writeFileSync(file, ''); // an empty SQLite database
      }
      expectOneLineError(await runCli(['status', '--url', db.url()]), /election tables are missing.*gemstone-election init/);
    });

    test('init creates the tables and is safe to run again', async () => {
      for (let run = 0; run < 2; run++) {
        const result = await runCli(['init', '--url', db.url()]);
        expect(result).toMatchObject({ code: 0, stderr: '' });
        expect(result.stdout).toMatch(/gemstone_election_candidate, gemstone_election_leader/);
      }
      ds = await db.connect({}, { createTables: false });
      const tables = await query(ds, 'SELECT COUNT(*) AS n FROM gemstone_election_leader');
      expect(Number(tables[0]!.n)).toBe(0);
      expect(json(await runCli(['status', '--url', db.url(), '--json']))).toEqual([]);
      const table = await runCli(['status', '--url', db.url()]);
      expect(table).toMatchObject({ code: 0, stderr: '' });
      expect(table.stdout).toMatch(/no namespaces/);
    });

    test('status: one row per namespace with leader, term, lease left and active candidates, then the candidates', async () => {
      const service = new ElectionService(ds, { expireSeconds: 120 });
      const [a, b, c] = [uuid(), uuid(), uuid()].sort();
      await service.elect(a!, { ns: 'billing', metadata: { host: 'web-1', pid: 4242 } });
      await service.registerCandidate(b!, { ns: 'billing', priority: -2, metadata: { host: 'web-2', pid: 7, zone: 'eu-west-1' } });
      await service.registerCandidate(c!, { ns: 'billing', eligible: false });
      await service.elect(b!, { ns: 'reports' });
      await service.resign(b!, { ns: 'reports' });
      await service.elect(c!, { ns: 'reports' }); // term 2 after the resignation
      await service.registerCandidate(a!, { ns: 'idle' });
      await service.registerCandidate(c!, { ns: 'idle' });
      // Expired: its registration ends where it began.
      await query(ds, 'UPDATE gemstone_election_candidate SET expires_at = last_heartbeat_at WHERE ns = ? AND candidate_id = ?', ['idle', c]);

      const rows = json(await runCli(['status', '--url', db.url(), '--json']));
      expect(rows.map((r) => r.ns)).toEqual(['billing', 'idle', 'reports']);
      const [billing, idle, reports] = rows as [StatusRow, StatusRow, StatusRow];
      expect(billing).toMatchObject({ leaderId: a, term: 1, candidates: [a, b, c] });
      expect(reports).toMatchObject({ leaderId: c, term: 2, candidates: [b, c] });
      expect(idle).toEqual({
        ns: 'idle',
        leaderId: null,
        term: null,
        leaseLeftMs: null,
        candidates: [a],
        candidateDetails: [{ candidateId: a, leader: false, priority: 0, eligible: true, metadata: null, expiresInMs: expect.any(Number) }],
      });
      expect(billing.candidateDetails.map(({ expiresInMs, ...rest }) => rest)).toEqual([
        { candidateId: a, leader: true, priority: 0, eligible: true, metadata: { host: 'web-1', pid: 4242 } },
        { candidateId: b, leader: false, priority: -2, eligible: true, metadata: { host: 'web-2', pid: 7, zone: 'eu-west-1' } },
        { candidateId: c, leader: false, priority: 0, eligible: false, metadata: null },
      ]);
      for (const detail of billing.candidateDetails) expect(detail.expiresInMs).toBeGreaterThan(60_000);
      for (const row of [billing, reports]) {
        expect(row.leaseLeftMs).toBeGreaterThan(60_000); // generous: the machine may be slow
        expect(row.leaseLeftMs).toBeLessThanOrEqual(120_000);
      }

      const only = json(await runCli(['status', '--url', db.url(), '--json', '--ns', 'reports']));
      expect(only).toEqual(
        [reports].map((r) => ({
          ...r,
          leaseLeftMs: expect.any(Number),
          candidateDetails: r.candidateDetails.map((detail) => ({ ...detail, expiresInMs: expect.any(Number) })),
        })),
      );

      const table = await runCli(['status', '--url', db.url()]);
      expect(table).toMatchObject({ code: 0, stderr: '' });
      const billingLine = table.stdout.split('\n').find((line) => line.includes('billing'));
      const billingCells = new RegExp(`billing\\s+│\\s+${a}\\s+│\\s+1\\s+│\\s+(\\d+\\.\\d)s\\s+│\\s+3\\s+│`).exec(billingLine ?? '');
      expect(billingCells).not.toBeNull();
      // Lease left of a 120 s lease: positive and at most the lease (a slow machine may take a while to get here).
      expect(Number(billingCells![1])).toBeGreaterThan(0);
      expect(Number(billingCells![1])).toBeLessThanOrEqual(120);
      expect(table.stdout.split('\n').find((line) => line.includes('idle'))).toMatch(/idle\s+│\s+none\s+│\s+-\s+│\s+-\s+│\s+1\s+│/);
      // The candidates table: role, priority, eligibility, host, pid and the rest of the metadata.
      const lineOf = (id: string) => table.stdout.split('\n').find((line) => line.includes('billing') && line.includes(id) && /leader|follower|observer/.test(line)) ?? '';
      expect(lineOf(a!)).toMatch(new RegExp(`billing\\s+│\\s+${a}\\s+│\\s+leader\\s+│\\s+0\\s+│\\s+yes\\s+│\\s+web-1\\s+│\\s+4242\\s+│\\s+-\\s+│`));
      expect(lineOf(b!)).toMatch(new RegExp(`${b}\\s+│\\s+follower\\s+│\\s+-2\\s+│\\s+yes\\s+│\\s+web-2\\s+│\\s+7\\s+│\\s+\\{"zone":"eu-west-1"\\}\\s+│`));
      expect(lineOf(c!)).toMatch(new RegExp(`${c}\\s+│\\s+observer\\s+│\\s+0\\s+│\\s+no\\s+│\\s+-\\s+│\\s+-\\s+│\\s+-\\s+│`));
    });

    test('status: lease left and liveness come from the database clock, not the host clock', async () => {
      const service = new ElectionService(ds, { expireSeconds: 120 });
      const leader = uuid();
      await service.elect(leader, { ns: 'clock' });
      // The CLI's host clock runs an hour ahead: a host-clock computation would call the lease expired.
      const skewed = json(
        await runCli(['status', '--url', db.url(), '--json', '--ns', 'clock'], { preload: [path.join(__dirname, 'skew-clock.js')] }),
      );
      expect(skewed).toHaveLength(1);
      expect(skewed[0]).toMatchObject({ leaderId: leader, term: 1, candidates: [leader] });
      // A host-clock computation would read about -3,480 s; the database clock reads what is left of 120 s.
      expect(skewed[0]!.leaseLeftMs).toBeGreaterThan(0);
      expect(skewed[0]!.leaseLeftMs).toBeLessThanOrEqual(120_000);
    });

    test('status --watch refreshes until interrupted, then exits 0', async () => {
      const child = startCli(['status', '--url', db.url(), '--json', '--ns', 'billing', '--watch', '0.3']);
      const result = finished(child);
      let lines = 0;
      await new Promise<void>((resolve) => {
        child.stdout!.on('data', (chunk: Buffer) => {
          lines += chunk.toString().split('\n').filter(Boolean).length;
          if (lines >= 3) resolve();
        });
      });
      child.kill('SIGINT');
      const { code, stdout, stderr } = await result;
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      const snapshots = stdout.trim().split('\n').map((line) => JSON.parse(line) as StatusRow[]);
      expect(snapshots.length).toBeGreaterThanOrEqual(3);
      for (const snapshot of snapshots) expect(snapshot.map((r) => r.ns)).toEqual(['billing']);
    });

    test('GEMSTONE_DB_URL is used without --url; --url wins over it', async () => {
      const fromEnv = json(await runCli(['status', '--json', '--ns', 'billing'], { env: { GEMSTONE_DB_URL: db.url() } }));
      expect(fromEnv.map((r) => r.ns)).toEqual(['billing']);
      // DATABASE_URL, the application's variable, is read too; GEMSTONE_DB_URL wins over it.
      const fromDatabaseUrl = json(await runCli(['status', '--json', '--ns', 'billing'], { env: { DATABASE_URL: db.url() } }));
      expect(fromDatabaseUrl.map((r) => r.ns)).toEqual(['billing']);
      const both = await runCli(['status', '--json'], { env: { DATABASE_URL: db.url(), GEMSTONE_DB_URL: 'foo://nowhere' } });
      expectOneLineError(both, /"foo:\/\/nowhere"/);
      const overridden = await runCli(['status', '--json', '--url', db.url()], { env: { GEMSTONE_DB_URL: 'foo://nowhere' } });
      expect(json(overridden).length).toBe(3 + 1); // billing, clock, idle, reports
    });
  },
  { kinds: ['sqlite', 'postgres'], sharedOnly: true },
);

describe('gemstone-election errors and help', () => {
  test('a bad URL: one line, exit 1', async () => {
    for (const command of ['status', 'init', 'demo']) {
      expectOneLineError(await runCli([command, '--url', 'foo://nowhere']), /bad database URL: --url must be a postgres:\/\/.*"foo:\/\/nowhere"/);
    }
    expectOneLineError(await runCli(['status'], { env: { GEMSTONE_DB_URL: 'sqlite:' } }), /bad database URL: --url has no file path/);
  });

  /** The advice without a database: both variables and a URL of every supported database. */
  function expectUrlAdvice(text: string): void {
    expect(text).toMatch(/pass --url with your application's database URL/);
    expect(text).toMatch(/set DATABASE_URL to it \(or GEMSTONE_DB_URL, which wins over DATABASE_URL\)/);
    for (const example of ['postgres://user:<password>@host:5432/app', 'mysql://user:<password>@host:3306/app', 'sqlite:/path/to/app.sqlite']) {
      expect(text).toContain(example);
    }
    expect(text).not.toMatch(/gemstone-election init/); // no SQLite file to create for a PostgreSQL user
  }

  test('no --url and no variable: the hint names the application database, not a SQLite file to create', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-cli-nourl-'));
    try {
      for (const command of ['status', 'history', 'runs', 'watch', 'dashboard']) {
        const result = await runCli(command === 'dashboard' ? [command, '--port', '0'] : [command], { cwd: dir });
        expectOneLineError(result, /no database given: /);
        expectUrlAdvice(result.stderr);
        expect(fs.readdirSync(dir)).toEqual([]);
      }
      // An empty gemstone.sqlite in the working directory (a file left by something else): the
      // tables are missing there, and the advice is still to name the application's database.
      fs.writeFileSync(path.join(dir, 'gemstone.sqlite'), '');
      for (const command of ['status', 'history', 'runs', 'watch', 'dashboard']) {
        const result = await runCli(command === 'dashboard' ? [command, '--port', '0'] : [command], { cwd: dir });
        expectOneLineError(result, /tables? (are|is) missing in sqlite:gemstone\.sqlite, the file the CLI opens when no database is given: /);
        expectUrlAdvice(result.stderr);
      }
      // init does what it is told (the embedded file, as the demo uses it) and says so.
      fs.rmSync(path.join(dir, 'gemstone.sqlite'));
      const init = await runCli(['init'], { cwd: dir });
      expect(init.code).toBe(0);
      expect(init.stdout).toMatch(/^election tables ready in sqlite:gemstone\.sqlite: /);
      expect(init.stderr).toMatch(/^gemstone-election: note: no database given, so this initialized the embedded file sqlite:gemstone\.sqlite in /);
      expectUrlAdvice(init.stderr);
      // Given a database, no note.
      const named = await runCli(['init'], { cwd: dir, env: { DATABASE_URL: 'sqlite:named.sqlite' } });
      expect(named).toMatchObject({ code: 0, stderr: '' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an unreachable database: one line, exit 1, password not shown', async () => {
    const url = 'postgres://postgres:secret@127.0.0.1:1/test';
    for (const command of ['status', 'init']) {
      const result = await runCli([command, '--url', url]);
      expectOneLineError(result, /cannot connect to postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/test: .*ECONNREFUSED/);
      expect(result.stderr).toMatch(/Check that the server runs/);
      expect(result.stderr).not.toContain('secret');
    }
  });

  test('--help on every command, exit 0', async () => {
    const top = await runCli(['--help']);
    expect(top).toMatchObject({ code: 0, stderr: '' });
    expect(top.stdout).toMatch(/Usage: gemstone-election \[options\] \[command\]/);
    for (const command of ['status', 'init', 'demo']) expect(top.stdout).toMatch(new RegExp(`\\n  ${command} `));
    const options: Record<string, string[]> = {
      status: ['--url', '--ns', '--json', '--watch'],
      init: ['--url'],
      demo: ['--url', '--workers', '--duration', '--chaos', '--lease', '--json'],
    };
    for (const [command, expected] of Object.entries(options)) {
      const help = await runCli([command, '--help']);
      expect(help).toMatchObject({ code: 0, stderr: '' });
      expect(help.stdout).toMatch(new RegExp(`^Usage: gemstone-election ${command} \\[options\\]`));
      for (const option of expected) expect(help.stdout).toContain(option);
    }
  });

  test('bad arguments: exit 1 with the reason', async () => {
    const unknown = await runCli(['status', '--bogus']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown option '--bogus'/);
    const workers = await runCli(['demo', '--workers', '0']);
    expect(workers.code).toBe(1);
    expect(workers.stderr).toMatch(/--workers.*must be an integer from 1 to 16/);
    const ns = await runCli(['status', '--ns', '']);
    expect(ns.code).toBe(1);
    expect(ns.stderr).toMatch(/--ns must not be empty/);
  });
});
