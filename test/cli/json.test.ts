/**
 * `--json` output carries durations as milliseconds with at most one decimal: host-clock
 * measurements (the takeover time) must not leak sub-millisecond noise like 1522.8175790000005.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { jsonDemoThroughTakeover, runCli } from './cli';

/** Every `…Ms` number in a JSON value, with its path. */
function durations(value: unknown, at = '$'): Array<[string, number]> {
  if (Array.isArray(value)) return value.flatMap((item, i) => durations(item, `${at}[${i}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]): Array<[string, number]> =>
    typeof item === 'number' && /Ms$/.test(key) ? [[`${at}.${key}`, item]] : durations(item, `${at}.${key}`),
  );
}

const oneDecimal = (ms: number) => Math.round(ms * 10) / 10 === ms;

describe('gemstone-election --json durations', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-json-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('demo --json --chaos: durationMs, longestLeaderlessMs and longestTakeoverMs have at most one decimal', async () => {
    const url = `sqlite:${path.join(dir, 'json.sqlite')}`;
    const result = await jsonDemoThroughTakeover(['--url', url], { cwd: dir });
    expect(result.code).toBe(130); // the demo's exit code after Ctrl-C, with its summary printed

    const summary = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(summary.kills).toBeGreaterThanOrEqual(1);
    expect(summary.longestTakeoverMs).toEqual(expect.any(Number)); // a host-clock measurement: the one that had noise
    const found = durations(summary);
    expect(found.map(([key]) => key)).toEqual(expect.arrayContaining(['$.durationMs', '$.longestLeaderlessMs', '$.longestTakeoverMs']));
    expect(found.filter(([, ms]) => !oneDecimal(ms))).toEqual([]);

    const status = await runCli(['status', '--json', '--url', url], { cwd: dir });
    expect(status.code).toBe(0);
    expect(durations(JSON.parse(status.stdout)).filter(([, ms]) => !oneDecimal(ms))).toEqual([]);
  }, 300_000);
});
