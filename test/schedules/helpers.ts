import type { DataSource } from 'typeorm';
import { ElectionService, ScheduledRunInfo } from 'gemstone-utils';

/** Every run of `name` in `ns`, oldest slot first. */
export async function runsOf(dataSource: DataSource, ns: string, name: string): Promise<ScheduledRunInfo[]> {
  const runs = await new ElectionService(dataSource).getRuns({ ns, name, limit: 1000 });
  return [...runs].sort((a, b) => a.slot.getTime() - b.slot.getTime());
}

/** The slots of `runs` as ms. */
export const slotsOf = (runs: readonly ScheduledRunInfo[]) => runs.map((r) => r.slot.getTime());

/**
 * `runs` less the row a stop may leave: a claim that commits just as the leadership ends is never
 * run and stays `running` for the next leader (docs/schedules.md, "What is guaranteed"). Asserts
 * that there is at most one such row (not among `ranSlots`, the slots whose job ran) and that it is
 * newer than every slot that ran; the caller checks the rows returned.
 */
export function lessClaimLeftAtStop(runs: readonly ScheduledRunInfo[], ranSlots: readonly number[]): ScheduledRunInfo[] {
  const left = runs.filter((r) => r.state === 'running' && !ranSlots.includes(r.slot.getTime()));
  expect(left.map((r) => ({ state: r.state, newest: r.slot.getTime() > Math.max(...ranSlots) }))).toEqual(left.length === 0 ? [] : [{ state: 'running', newest: true }]);
  return runs.filter((r) => !left.includes(r));
}

/** A promise and its resolve, for jobs the test releases. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Resolves when `signal` aborts. */
export const aborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
