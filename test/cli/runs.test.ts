/**
 * `gemstone-election runs` as a real child process: the runs newest slot first as a table or JSON
 * (as `getRuns` returns them), `--ns`, `--name`, `--limit` and `--before`, hostile values shown
 * inert in the table and whole in JSON, usage errors, and a one-line error without the runs table.
 */
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, query } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { databaseNow, leaderOf, runsStoreOf } from '../schedules/support';
import { CliResult, runCli } from './cli';

interface RunLine {
  ns: string;
  name: string;
  slot: string;
  state: string;
  attempt: number;
  term: number;
  candidateId: string;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
}

function json(result: CliResult): RunLine[] {
  expect(result).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(result.stdout) as RunLine[];
}

/** A failure message a job could throw: a newline, an ANSI escape (clear screen) and a right-to-left override, then more than a cell holds. */
const HOSTILE_ERROR = `boom\nforged line \u001b[2J\u202eevil ${'x'.repeat(200)} tail`;
const HOSTILE_NAME = 'report\u001b[31m\r\nred';

describeEachDatabase(
  'gemstone-election runs',
  (db) => {
    let ds: DataSource;
    const ns = freshNs();
    let base: number;
    const at = (minute: number) => new Date(base + minute * 60_000);
    let leader: { ns: string; candidateId: string; term: number };

    beforeAll(async () => {
      ds = await db.connect();
      const service = new ElectionService(ds);
      leader = await leaderOf(service, ns);
      const store = runsStoreOf(ds);
      base = (await databaseNow(ds)).getTime() - 3_600_000;
      await store.record([1, 2].map((m) => ({ ns, name: 'nightly', slot: at(m) })), leader, 'missed');
      await store.claim({ ns, name: 'nightly', slot: at(3) }, leader, 3);
      await store.finish({ ns, name: 'nightly', slot: at(3) }, leader, 'done');
      await store.claim({ ns, name: HOSTILE_NAME, slot: at(4) }, leader, 3);
      await store.finish({ ns, name: HOSTILE_NAME, slot: at(4) }, leader, 'failed', HOSTILE_ERROR);
      await store.claim({ ns, name: 'nightly', slot: at(5) }, leader, 3);
    });

    test('--json: newest slot first, whole, as getRuns returns them; --name, --limit and --before narrow it', async () => {
      const lines = json(await runCli(['runs', '--url', db.url(), '--ns', ns, '--json']));
      expect(lines.map((l) => [l.name, l.state, Date.parse(l.slot) - base])).toEqual([
        ['nightly', 'running', 5 * 60_000],
        [HOSTILE_NAME, 'failed', 4 * 60_000],
        ['nightly', 'done', 3 * 60_000],
        ['nightly', 'missed', 2 * 60_000],
        ['nightly', 'missed', 1 * 60_000],
      ]);
      const runs = await new ElectionService(ds).getRuns({ ns });
      expect(lines).toEqual(
        runs.map((r) => ({
          ns,
          name: r.name,
          slot: r.slot.toISOString(),
          state: r.state,
          attempt: r.attempt,
          term: r.term,
          candidateId: r.candidateId,
          startedAt: r.startedAt?.toISOString() ?? null,
          finishedAt: r.finishedAt?.toISOString() ?? null,
          error: r.error,
        })),
      );
      expect(lines[1]!.error).toBe(HOSTILE_ERROR);
      const named = json(await runCli(['runs', '--url', db.url(), '--ns', ns, '--name', 'nightly', '--json', '--limit', '2']));
      expect(named.map((l) => Date.parse(l.slot) - base)).toEqual([5 * 60_000, 3 * 60_000]);
      const older = json(await runCli(['runs', '--url', db.url(), '--ns', ns, '--json', '--before', named[1]!.slot]));
      expect(older.map((l) => Date.parse(l.slot) - base)).toEqual([2 * 60_000, 1 * 60_000]);
      expect(json(await runCli(['runs', '--url', db.url(), '--ns', freshNs(), '--json']))).toEqual([]);
      // Without --ns: every namespace, this one's runs among them.
      const all = json(await runCli(['runs', '--url', db.url(), '--json', '--limit', '1000']));
      expect(all.filter((l) => l.ns === ns)).toEqual(lines);
    });

    test('a table: one row per run; hostile text inert and the error cut', async () => {
      const result = await runCli(['runs', '--url', db.url(), '--ns', ns]);
      expect(result).toMatchObject({ code: 0, stderr: '' });
      // Nothing from the database reached the terminal as a control or format character.
      expect(result.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f\u202e]/);
      const rows = result.stdout.split('\n').filter((line) => line.startsWith(`│ ${ns}`));
      expect(rows).toHaveLength(5);
      expect(rows[0]).toMatch(new RegExp(`│ nightly +│ [^│]+│ running +│ 1 +│ ${leader.term} +│ ${leader.candidateId} │ [^│]+│ - +│ - +│$`));
      expect(rows[1]).toContain('report\\u001b[31m\\u000d\\u000ared');
      expect(rows[1]).toContain('│ failed ');
      expect(rows[1]).toContain('boom\\u000aforged line \\u001b[2J\\u202eevil xxx');
      expect(rows[1]).toMatch(/…/);
      expect(rows[1]).not.toContain('tail');
      expect(rows[3]).toMatch(/│ missed +│ 0 +│/);
      const empty = await runCli(['runs', '--url', db.url(), '--ns', freshNs()]);
      expect(empty).toMatchObject({ code: 0, stderr: '' });
      expect(empty.stdout).toMatch(/no runs/);
    });

    test('bad options: usage error naming the option, exit 1', async () => {
      for (const args of [['--limit', '0'], ['--limit', '2.5'], ['--limit', '1001'], ['--before', 'yesterday'], ['--before', '2026-02-30T00:00:00Z'], ['--name', ''], ['--ns', '']]) {
        const result = await runCli(['runs', '--url', db.url(), ...args]);
        expect(result.code).toBe(1);
        expect(result.stderr).toMatch(new RegExp(args[0]!));
      }
    });

    test('a database without the runs table (created by an older version): one-line error naming init, exit 1', async () => {
      const old = await db.sibling();
      const own = await old.connect();
      await query(own, 'DROP TABLE gemstone_election_run');
      const result = await runCli(['runs', '--url', old.url()]);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^gemstone-election: .*runs table is missing.*gemstone-election init/);
    });
  },
  { sharedOnly: true },
);
