/**
 * `gemstone-election status` lists namespaces in the order a reader expects: numbers inside names
 * by value (`shard-2` before `shard-10`), the same on every database (the CLI sorts, not the
 * database's collation), in the table and in `--json`.
 */
import * as path from 'path';
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, uuid } from '../support/databases';
import { ROOT, runCli } from './cli';

const { naturalCompare } = require(path.join(ROOT, 'dist', 'src', 'cli', 'format.js')) as typeof import('../../src/cli/format');

/** In the order status must list them. */
const NAMESPACES = ['billing', 'shard-1', 'shard-2', 'shard-02b', 'shard-9', 'shard-10', 'shard-10-a', 'shard-10-b', 'shard-100', 'shards'];

describe('naturalCompare', () => {
  test('digit runs by value, the rest by code unit, total and antisymmetric', () => {
    const shuffled = [...NAMESPACES].reverse();
    expect(shuffled.sort(naturalCompare)).toEqual(NAMESPACES);
    expect(['a-01', 'a-1', 'a-001'].sort(naturalCompare)).toEqual(['a-001', 'a-01', 'a-1']);
    // Longer than a double holds exactly: compared as digits, not as numbers.
    expect(['n-90071992547409930', 'n-90071992547409929'].sort(naturalCompare)).toEqual(['n-90071992547409929', 'n-90071992547409930']);
    for (const a of NAMESPACES) for (const b of NAMESPACES) expect(Math.sign(naturalCompare(a, b))).toBe(-Math.sign(naturalCompare(b, a)) || 0);
  });
});

describeEachDatabase(
  'gemstone-election status: namespaces in natural order',
  (db) => {
    let ds: DataSource;
    beforeAll(async () => {
      ds = await db.connect();
    });

    test('shard-2 before shard-10, in the table and in --json', async () => {
      const service = new ElectionService(ds, { expireSeconds: 120 });
      // Created in an order that is neither the expected one nor the byte order.
      for (const ns of [...NAMESPACES].sort().reverse()) await service.elect(uuid(), { ns });

      const json = await runCli(['status', '--url', db.url(), '--json']);
      expect(json).toMatchObject({ code: 0, stderr: '' });
      expect((JSON.parse(json.stdout) as { ns: string }[]).map((row) => row.ns)).toEqual(NAMESPACES);

      const table = await runCli(['status', '--url', db.url()]);
      expect(table).toMatchObject({ code: 0, stderr: '' });
      // Two tables, namespaces then candidates (one each here): both list the namespaces in order.
      const listed = table.stdout
        .split('\n')
        .map((line) => /^│ (\S+)\s+│ [0-9a-f]{8}-/.exec(line)?.[1])
        .filter((ns): ns is string => ns !== undefined);
      expect(listed).toEqual([...NAMESPACES, ...NAMESPACES]);
    });
  },
  { kinds: ['sqlite', 'postgres', 'mariadb'], sharedOnly: true },
);
