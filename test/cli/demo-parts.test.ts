/**
 * The demo's pure parts, from the build: the leaderless-time tracker and the live view's frames.
 */
import * as path from 'path';
import { Writable } from 'stream';
import { ROOT } from './cli';

const dist = (file: string) => path.join(ROOT, 'dist', 'src', 'cli', 'demo', file);
const { LeaderlessTracker } = require(dist('gap.js')) as typeof import('../../src/cli/demo/gap');
const { LiveView, PlainLog } = require(dist('view.js')) as typeof import('../../src/cli/demo/view');

describe('LeaderlessTracker (database-clock samples of the leader row)', () => {
  const LEASE = 2000;
  const [a, b] = ['aaaaaaaa-0000-4000-8000-000000000000', 'bbbbbbbb-0000-4000-8000-000000000000'];

  test('nothing is counted before the first leader, and null until one is seen', () => {
    const gaps = new LeaderlessTracker(LEASE);
    gaps.observe({ dbNowMs: 0, leaderId: null, term: null, leaseLeftMs: null });
    expect(gaps.longestMs).toBeNull();
    gaps.observe({ dbNowMs: 5000, leaderId: a, term: 1, leaseLeftMs: 1900 });
    expect(gaps.longestMs).toBe(0);
  });

  test('a takeover after expiry: from the end of the old lease to the start of the new one', () => {
    const gaps = new LeaderlessTracker(LEASE);
    gaps.observe({ dbNowMs: 1000, leaderId: a, term: 1, leaseLeftMs: 1500 }); // a's lease ends at 2500
    gaps.observe({ dbNowMs: 2600, leaderId: null, term: 1, leaseLeftMs: null });
    gaps.observe({ dbNowMs: 3000, leaderId: b, term: 2, leaseLeftMs: 1900 }); // b's lease started at 2900
    expect(gaps.longestMs).toBe(400);
    // A later, shorter gap does not replace it; renewals are not gaps.
    gaps.observe({ dbNowMs: 3500, leaderId: b, term: 2, leaseLeftMs: 1950 });
    gaps.observe({ dbNowMs: 5500, leaderId: a, term: 3, leaseLeftMs: 1990 }); // b ended 5450, a started 5490
    expect(gaps.longestMs).toBe(400);
  });

  test('a lease vacated early counts from the first sample without a leader', () => {
    const gaps = new LeaderlessTracker(LEASE);
    gaps.observe({ dbNowMs: 1000, leaderId: a, term: 1, leaseLeftMs: 1800 });
    gaps.observe({ dbNowMs: 1100, leaderId: null, term: 1, leaseLeftMs: null }); // resigned at once
    gaps.observe({ dbNowMs: 1700, leaderId: b, term: 2, leaseLeftMs: 2000 }); // started 1700
    expect(gaps.longestMs).toBe(600);
  });

  test('a gap still open at the end is counted by close()', () => {
    const gaps = new LeaderlessTracker(LEASE);
    gaps.observe({ dbNowMs: 1000, leaderId: a, term: 1, leaseLeftMs: 1000 });
    gaps.observe({ dbNowMs: 2100, leaderId: null, term: 1, leaseLeftMs: null });
    gaps.close(4000);
    expect(gaps.longestMs).toBe(2000);
  });
});

class Screen extends Writable {
  text = '';
  isTTY = true;
  constructor(readonly columns: number) {
    super();
  }
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

const strip = (text: string) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');

describe('demo output', () => {
  const rows = [
    { name: 'worker-1', pid: 101, candidateId: 'c0ffee00-0000-4000-8000-000000000000', role: 'leader' as const, term: 7, leaseLeftMs: 1500, lastAction: 'ledger #12 (term 7)', lastActionAt: Date.now() },
    { name: 'worker-2', pid: 102, candidateId: 'deadbeef-0000-4000-8000-000000000000', role: 'paused' as const, term: 6, leaseLeftMs: null, lastAction: 'paused by chaos', lastActionAt: Date.now() },
  ];

  test('the live view redraws one frame in place: a row per worker, then the event log', () => {
    const screen = new Screen(200);
    const view = new LiveView(screen as unknown as NodeJS.WriteStream, 2);
    for (const text of ['first', 'second', 'third']) view.event({ at: new Date(), text, tone: 'info' });
    view.event({ at: new Date(), text: 'routine write', tone: 'info', routine: true });
    view.render({ title: 'demo', elapsedMs: 1000, durationMs: 30_000 }, rows);
    const first = strip(screen.text);
    const lines = first.split('\n').filter(Boolean);
    expect(lines[0]).toMatch(/^demo\s+1\.0s \/ 30s$/);
    expect(first).toMatch(/│ worker-1 │ 101 +│ c0ffee00 +│ leader +│ 7 +│ 1\.5s +│ ledger #12 \(term 7\)/);
    expect(first).toMatch(/│ worker-2 │ 102 +│ deadbeef +│ paused +│ 6 +│ - +│ paused by chaos/);
    // Only the latest two events, and no routine ones.
    expect(first).not.toMatch(/first|routine write/);
    expect(first).toMatch(/second[\s\S]*third/);

    screen.text = '';
    view.render({ title: 'demo', elapsedMs: 1200, durationMs: 30_000 }, rows);
    // The second frame starts by moving the cursor up over the whole first frame.
    expect(screen.text.startsWith(`\x1b[${lines.length}A`)).toBe(true);
    view.close();
  });

  test('lines wider than the terminal are cut, so the redraw stays aligned', () => {
    const screen = new Screen(40);
    const view = new LiveView(screen as unknown as NodeJS.WriteStream);
    view.render({ title: 'a title that is much longer than forty columns, surely', elapsedMs: 0, durationMs: 1000 }, rows);
    const lines = strip(screen.text).split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(4);
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(40);
  });

  test('without a terminal: one plain line per event, routine ones included', () => {
    const out = new Screen(80);
    const log = new PlainLog(out);
    log.event({ at: new Date('2026-01-02T03:04:05.678Z'), text: 'worker-1 became leader (term 1)', tone: 'good' });
    log.event({ at: new Date('2026-01-02T03:04:06.000Z'), text: 'worker-1 committed ledger entry #1 (term 1)', tone: 'info', routine: true });
    log.render();
    expect(out.text).toBe('03:04:05.678 worker-1 became leader (term 1)\n03:04:06.000 worker-1 committed ledger entry #1 (term 1)\n');
  });
});
