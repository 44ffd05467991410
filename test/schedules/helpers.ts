import type { DataSource } from 'typeorm';
import { ElectionService, ScheduledRunInfo } from 'gemstone-utils';

/** Every run of `name` in `ns`, oldest slot first. */
export async function runsOf(dataSource: DataSource, ns: string, name: string): Promise<ScheduledRunInfo[]> {
  const runs = await new ElectionService(dataSource).getRuns({ ns, name, limit: 1000 });
  return [...runs].sort((a, b) => a.slot.getTime() - b.slot.getTime());
}

/** The slots of `runs` as ms. */
export const slotsOf = (runs: readonly ScheduledRunInfo[]) => runs.map((r) => r.slot.getTime());

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
