/// <reference types="node" preserve="true" />
import type { Overview } from '../queries/overview';
import type { EventStream } from './event-stream';
import type { OverviewPolls } from './overview-polls';

/** What of an overview page decides whether it changed: everything but the clock's progress. */
function fingerprint(overview: Overview): string {
  const { dbNow: _now, rows, ...rest } = overview;
  return JSON.stringify({ ...rest, rows: rows.map(({ leaseLeftMs: _left, ...row }) => row) });
}

/** One message a failing read leaves on the page; cleared by the next `overview` event. */
export interface ProblemEvent {
  error: string;
}

/**
 * Streams an overview page as `overview` events from the page's shared poll (see
 * {@link OverviewPolls}): sent when it changed (a renewal moves a lease's end, so counts and
 * leases stay current). A failed read sends a `problem` event; the next good one is sent again.
 * Ends when `signal` aborts, after the poll stopped if this stream was its last.
 */
export async function streamOverview(
  stream: EventStream,
  signal: AbortSignal,
  polls: OverviewPolls,
  key: string,
  read: (signal: AbortSignal) => Promise<Overview>,
): Promise<void> {
  let last = '';
  await polls.follow(
    key,
    read,
    (result) => {
      if ('overview' in result) {
        const changed = fingerprint(result.overview);
        if (changed === last) return;
        last = changed;
        stream.send('overview', result.overview);
      } else {
        last = ''; // the next good read is sent, which clears the problem on the page
        const { error } = result;
        const problem: ProblemEvent = { error: error instanceof Error ? error.message.split('\n')[0]! : String(error) };
        stream.send('problem', problem);
      }
    },
    signal,
  );
}
