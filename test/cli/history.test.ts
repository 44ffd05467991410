/**
 * `gemstone-election history` as a real child process: the terms newest first as a table or
 * JSON, `--limit` and `--before`, usage errors, and a one-line error without the history table.
 */
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { CliResult, runCli } from './cli';

interface HistoryLine {
  ns: string;
  term: number;
  leaderId: string;
  acquiredAt: string;
  endedAt: string | null;
  endReason: string | null;
}

function json(result: CliResult): HistoryLine[] {
  expect(result).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(result.stdout) as HistoryLine[];
}

describeEachDatabase(
  'gemstone-election history',
  (db) => {
    let ds: DataSource;
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];

    beforeAll(async () => {
      ds = await db.connect();
      const service = new ElectionService(ds);
      await service.elect(a, { ns });
      await service.resign(a, { ns });
      await service.elect(b, { ns });
      await service.unregisterCandidate(b, { ns });
      await service.elect(a, { ns });
    });

    test('--json: the terms newest first, as getHistory returns them', async () => {
      const lines = json(await runCli(['history', '--url', db.url(), '--ns', ns, '--json']));
      expect(lines.map((l) => [l.term, l.leaderId, l.endReason])).toEqual([
        [3, a, null],
        [2, b, 'unregistered'],
        [1, a, 'resigned'],
      ]);
      const entries = await new ElectionService(ds).getHistory({ ns });
      expect(lines).toEqual(
        entries.map((e) => ({
          ns,
          term: e.term,
          leaderId: e.leaderId,
          acquiredAt: e.acquiredAt.toISOString(),
          endedAt: e.endedAt?.toISOString() ?? null,
          endReason: e.endReason,
        })),
      );
      expect(json(await runCli(['history', '--url', db.url(), '--ns', ns, '--json', '--limit', '1'])).map((l) => l.term)).toEqual([3]);
      expect(json(await runCli(['history', '--url', db.url(), '--ns', ns, '--json', '--before', '3'])).map((l) => l.term)).toEqual([2, 1]);
      expect(json(await runCli(['history', '--url', db.url(), '--ns', freshNs(), '--json']))).toEqual([]);
    });

    test('a table: one row per term, the current one marked', async () => {
      const result = await runCli(['history', '--url', db.url(), '--ns', ns]);
      expect(result).toMatchObject({ code: 0, stderr: '' });
      const rows = result.stdout.split('\n').filter((line) => /^│ \d/.test(line));
      expect(rows).toHaveLength(3);
      expect(rows[0]).toMatch(new RegExp(`^│ 3 +│ ${a} .*│ current .*│ - +│$`));
      expect(rows[1]).toMatch(new RegExp(`^│ 2 +│ ${b} .*│ unregistered │$`));
      expect(rows[2]).toMatch(new RegExp(`^│ 1 +│ ${a} .*│ resigned +│$`));
      const empty = await runCli(['history', '--url', db.url(), '--ns', 'nobody']);
      expect(empty).toMatchObject({ code: 0, stderr: '' });
      expect(empty.stdout).toMatch(/no terms in namespace "nobody"/);
    });

    test('bad --limit or --before: usage error, exit 1', async () => {
      for (const args of [['--limit', '0'], ['--limit', '2.5'], ['--limit', '10001'], ['--before', '-1']]) {
        const result = await runCli(['history', '--url', db.url(), ...args]);
        expect(result.code).toBe(1);
        expect(result.stderr).toMatch(new RegExp(args[0]!));
      }
    });

    test('a database without the history table (created by an older version): one-line error naming init, exit 1', async () => {
      const old = await db.sibling();
      const own = await old.connect();
      await query(own, 'DROP TABLE gemstone_election_history');
      const result = await runCli(['history', '--url', old.url()]);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^gemstone-election: .*history table is missing.*gemstone-election init/);
    });
  },
  { sharedOnly: true },
);
