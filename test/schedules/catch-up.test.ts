/** The catch-up plan, pure: which slots a new leader runs and which it records missed. */
import { planCatchUp } from '../../dist/src/schedules/catch-up';
import { everySeries } from '../../dist/src/schedules/slots';

const S = 1000;
const series = everySeries(60 * S); // a slot a minute
const base = { series, catchUpWindowMs: 10 * 60 * S };
// Newest recorded slot at minute 100, now at minute 130 (+ 5 s): 30 slots came due, 10 of them in the window.
const newest = 100 * 60 * S;
const now = 130 * 60 * S + 5 * S;
const minutes = (slots: readonly number[]) => slots.map((t) => t / 60 / S);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test("'all' runs every slot in the window, oldest first; older ones are missed", () => {
  const plan = planCatchUp({ ...base, newest, now, catchUp: 'all' });
  // The window starts at minute 120:05, so 121..130 run.
  expect(minutes(plan.run)).toEqual(range(121, 130));
  expect(minutes(plan.missed)).toEqual(range(101, 120));
  expect(plan.unrecorded).toBe(false);
});

test("'latest' runs the newest in the window; 'none' runs nothing", () => {
  const latest = planCatchUp({ ...base, newest, now, catchUp: 'latest' });
  expect(minutes(latest.run)).toEqual([130]);
  expect(minutes(latest.missed)).toEqual(range(101, 129));
  const none = planCatchUp({ ...base, newest, now, catchUp: 'none' });
  expect(none.run).toEqual([]);
  expect(minutes(none.missed)).toEqual(range(101, 130));
});

test('a slot due exactly now is due; nothing after newest means an empty plan; no history means nothing to catch up', () => {
  expect(minutes(planCatchUp({ ...base, newest, now: 101 * 60 * S, catchUp: 'all' }).run)).toEqual([101]);
  expect(planCatchUp({ ...base, newest, now: newest + 59 * S, catchUp: 'all' })).toEqual({ run: [], missed: [], unrecorded: false });
  expect(planCatchUp({ ...base, newest: null, now, catchUp: 'all' })).toEqual({ run: [], missed: [], unrecorded: false });
});

test('the bounds keep the newest: runs and recorded misses', () => {
  const plan = planCatchUp({ ...base, newest, now, catchUp: 'all', maxRuns: 3, maxMissed: 4 });
  expect(minutes(plan.run)).toEqual([128, 129, 130]);
  expect(minutes(plan.missed)).toEqual([124, 125, 126, 127]);
  expect(plan.unrecorded).toBe(true);
  // A week down with a slot a second: bounded work, the default bounds.
  const second = everySeries(S);
  const week = planCatchUp({ series: second, catchUpWindowMs: 3_600_000, newest: 0, now: 7 * 86_400_000, catchUp: 'none' });
  expect(week.missed.length).toBe(100);
  expect(week.unrecorded).toBe(true);
});
