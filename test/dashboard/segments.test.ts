/**
 * The timeline's segments (src/dashboard/client/timeline.ts, run as the browser runs it: the built
 * ES module, in a child process). The page reads the history and the leader row in two requests;
 * after a hand-over the history can name the new term before the row as last read does. The
 * newest open term is then the current one, not "expired" (seen in Chromium under load: the terms
 * table said "expired" for the term just granted, until the next read of the row).
 */
import { execFileSync } from 'child_process';
import * as path from 'path';

const MODULE = path.join(__dirname, '..', '..', 'dist', 'src', 'dashboard', 'client', 'timeline.js');

type Segment = { kind: string; from: number; to: number; term: number | null };

/** segments(terms, state, now) of the built client module. */
function segments(terms: unknown[], state: unknown, now: number): Segment[] {
  const script = `import { segments } from ${JSON.stringify(`file://${MODULE}`)};
process.stdout.write(JSON.stringify(segments(${JSON.stringify(terms)}, ${JSON.stringify(state)}, ${now})));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as Segment[];
}

const term = (n: number, acquiredAt: number, endedAt: number | null = null, endReason: string | null = null) => ({
  ns: 'n',
  term: n,
  leaderId: `leader-${n}`,
  acquiredAt,
  endedAt,
  endReason,
  metadata: null,
});

describe('timeline segments', () => {
  test('the legend and the stylesheet have a colour for every end reason the history stores', () => {
    const { HISTORY_END_REASONS } = require('../../dist/entities/ElectionHistory') as { HISTORY_END_REASONS: readonly string[] };
    const { PAGE_CSS } = require('../../dist/src/dashboard/assets/style') as { PAGE_CSS: string };
    const script = `import { REASONS } from ${JSON.stringify(`file://${MODULE}`)};
process.stdout.write(JSON.stringify(REASONS.map(([kind]) => kind)));`;
    const legend = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as string[];
    expect(HISTORY_END_REASONS).toContain('operator');
    for (const reason of HISTORY_END_REASONS) {
      expect(legend).toContain(reason);
      expect(PAGE_CSS).toContain(`.seg-${reason} {`);
    }
  });

  const terms = [term(1, 1_000, 5_000, 'unregistered'), term(2, 5_100)];

  test('the newest open term is current while the leader row as last read is of an older term', () => {
    const shown = segments(terms, { live: true, term: 1, leaseExpiresAt: 20_000 }, 9_000);
    expect(shown.map((s) => [s.term, s.kind])).toEqual([
      [1, 'unregistered'],
      [null, 'vacant'],
      [2, 'current'],
    ]);
    expect(shown.at(-1)).toMatchObject({ from: 5_100, to: 9_000 });
  });

  test('once the row is read: current while its lease is live, expired at its lease end when it ran out', () => {
    expect(segments(terms, { live: true, term: 2, leaseExpiresAt: 20_000 }, 9_000).at(-1)).toMatchObject({ term: 2, kind: 'current', to: 9_000 });
    expect(segments(terms, { live: false, term: 2, leaseExpiresAt: 8_000 }, 9_000).slice(-2)).toEqual([
      { kind: 'expired', from: 5_100, to: 8_000, term: 2, label: expect.stringMatching(/· expired$/) },
      { kind: 'vacant', from: 8_000, to: 9_000, term: null, label: expect.any(String) },
    ]);
  });

  test('an open term older than a later one stays expired at the next acquisition', () => {
    const lapsed = [term(1, 1_000), term(2, 5_100)];
    expect(segments(lapsed, { live: true, term: 2, leaseExpiresAt: 20_000 }, 9_000).map((s) => [s.term, s.kind, s.to])).toEqual([
      [1, 'expired', 5_100],
      [2, 'current', 9_000],
    ]);
  });
});
