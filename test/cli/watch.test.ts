/**
 * `gemstone-election watch` as a real child process: one line per change (JSON lines with
 * `--json`), a clean exit 0 on SIGINT, a one-line error for missing tables.
 */
import * as fs from 'fs';
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';
import { finished, runCli, startCli } from './cli';

interface ChangeLine {
  ns: string;
  leaderId: string | null;
  term: number | null;
  metadata: unknown;
  at: string;
}

describeEachDatabase(
  'gemstone-election watch',
  (db) => {
    let ds: DataSource;

    beforeAll(async () => {
      ds = await db.connect();
    });

    test('--json streams the current state, then one JSON line per change; SIGINT ends it with exit 0', async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const service = new ElectionService(ds);
      await service.elect(a, { ns });
      const child = startCli(['watch', '--url', db.url(), '--ns', ns, '--json', '--poll-ms', '100']);
      const done = finished(child, 60_000);
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      const lines = () => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as ChangeLine);
      const seen = (leaderId: string | null, term: number) => lines().some((l) => l.leaderId === leaderId && l.term === term);

      await waitFor('the current state', () => seen(a, 1), 20_000);
      await service.resign(a, { ns });
      await waitFor('the vacancy', () => seen(null, 1), 20_000);
      await service.elect(b, { ns });
      await waitFor('the new leader', () => seen(b, 2), 20_000);
      child.kill('SIGINT');
      const result = await done;
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(lines().map((l) => [l.leaderId, l.term])).toEqual([
        [a, 1],
        [null, 1],
        [b, 2],
      ]);
      for (const line of lines()) {
        expect(line.ns).toBe(ns);
        expect(Number.isNaN(Date.parse(line.at))).toBe(false);
        expect(line.at).toMatch(/Z$/);
      }
    });

    test('without --json: one readable line per change', async () => {
      const ns = freshNs();
      const a = uuid();
      const child = startCli(['watch', '--url', db.url(), '--ns', ns, '--poll-ms', '100']);
      const done = finished(child, 60_000);
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      await waitFor('the first line', () => stdout.includes('\n'), 20_000);
      await new ElectionService(ds).elect(a, { ns });
      await waitFor('the leader line', () => stdout.includes(a), 20_000);
      child.kill('SIGINT');
      expect(await done).toMatchObject({ code: 0, stderr: '' });
      const lines = stdout.trimEnd().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(new RegExp(`^\\S+Z "${ns}" no leader \\(never elected\\)$`));
      expect(lines[1]).toMatch(new RegExp(`^\\S+Z "${ns}" leader ${a} term 1$`));
    });

    test('a reader that goes away (`watch | head -1`): the next line ends the watch, exit 0, no EPIPE', async () => {
      const ns = freshNs();
      const service = new ElectionService(ds);
      const child = startCli(['watch', '--url', db.url(), '--ns', ns, '--json', '--poll-ms', '100']);
      const done = finished(child, 60_000);
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      await waitFor('the first line', () => stdout.includes('\n'), 20_000);
      child.stdout!.destroy(); // as head does after its line
      // Changes to print, until the watch found its reader gone.
      let term = 0;
      const elector = uuid();
      let running = true;
      void done.finally(() => (running = false));
      while (running && term < 200) {
        await service.elect(elector, { ns });
        await service.resign(elector, { ns });
        term++;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const result = await done;
      expect(result.stderr).not.toMatch(/EPIPE|Error/);
      expect(result).toMatchObject({ code: 0, stderr: '' });
    }, 90_000);

    test('bad --poll-ms and --ns are usage errors; missing tables a one-line error, exit 1', async () => {
      const bad = await runCli(['watch', '--url', db.url(), '--poll-ms', '0']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/--poll-ms/);
      const badNs = await runCli(['watch', '--url', db.url(), '--ns', '']);
      expect(badNs.code).toBe(1);
      expect(badNs.stderr).toMatch(/--ns/);

      const empty = await db.sibling();
      if (empty.kind === 'sqlite') fs.writeFileSync(empty.url().slice('sqlite:'.length).split('?')[0]!, '');
      const missing = await runCli(['watch', '--url', empty.url(), '--poll-ms', '100'], { timeoutMs: 30_000 });
      expect(missing.code).toBe(1);
      expect(missing.stdout).toBe('');
      const lines = missing.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^gemstone-election: .*election tables are missing.*gemstone-election init/);
    });
  },
  { sharedOnly: true },
);
