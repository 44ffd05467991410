// @ts-check
'use strict';
/**
 * The job of the schedule every chaos worker runs in each namespace: one ledger row written in
 * `run.transaction`, so it commits with the slot's `done` or not at all. The checker then finds
 * exactly one such row per `done` slot, and none for a slot that is not done.
 */
const { NotLeaderError } = require('gemstone-utils');

/** The schedule's name, in every namespace. */
const SCHEDULE = 'chaos-ledger';

/**
 * Its start and its transaction's outcome go to the worker's event log and operation history; a
 * failure is thrown on, so the library decides (a lost leadership: the slot runs again; anything
 * else: failed).
 * @param {{ insert: string, candidateId: string, slot: number, log: (ev: string, fields?: Record<string, unknown>) => void,
 *   ops: ReturnType<typeof import('./op-recorder').opRecorder>, describe: (error: unknown) => string,
 *   started?: (run: import('gemstone-utils').ScheduledRun) => void }} worker
 *   `insert`: the ledger's job insert (database.js `jobInsert`); `slot`: the worker's slot; `started`: told first, as the job starts
 * @returns {(run: import('gemstone-utils').ScheduledRun) => Promise<void>}
 */
function ledgerJob({ insert, candidateId, slot, log, ops, describe, started }) {
  return async (run) => {
    started?.(run);
    const tag = { ns: run.ns, name: run.name, slot: run.slot.getTime(), attempt: run.attempt, term: run.lease.term };
    log('job-start', tag);
    ops.jobStarted(tag);
    try {
      await run.transaction((manager) => manager.query(insert, [run.ns, run.lease.term, candidateId, slot, run.name, tag.slot, run.attempt]));
      ops.jobReturned(tag, 'committed');
      log('job-commit', tag);
    } catch (error) {
      const refused = error instanceof NotLeaderError;
      ops.jobReturned(tag, refused ? 'refused' : 'error');
      log(refused ? 'job-fenced' : 'job-error', { ...tag, message: describe(error) });
      throw error;
    }
  };
}

module.exports = { SCHEDULE, ledgerJob };
