// @ts-check
'use strict';
/**
 * A worker's operation history for the linearizability checker (linearizability.js): each elect
 * (one line per tick, from the elector's `'tick'` event), each fenced write (one line when it is
 * invoked, one when it returns), each election (a bound on the claims of slots under its term),
 * each scheduled job (when it starts — its claim returned — and when its `run.transaction`
 * returns), the demotions that precede a vacate, and the stop. JSON lines,
 * appended synchronously, so a SIGKILL loses nothing that happened before it; a write with an
 * invocation and no return is an operation in flight when the process died.
 *
 * Times are epoch milliseconds of this host's real-time clock, `Date.now()`: the clock the database
 * server reads (`clock_timestamp()`, `UTC_TIMESTAMP(6)`, SQLite's 'now') and the one the electors'
 * skew is measured against (a tick's invocation is recovered from it). All workers and the database
 * server run on one host, so they read the same clock, and the checker compares them with a small
 * tolerance. (`performance.timeOrigin + performance.now()` is a monotonic clock anchored once at
 * process start: it parted from the real-time clock by 5–15 ms within a run, which dated a fenced
 * write before the ledger's insert of it in a CI run.)
 */
const fs = require('fs');

const now = () => Date.now();

/**
 * @param {string | undefined} file no file: nothing is recorded
 * @param {{ process: string, candidateId: string, slot: number }} who
 */
function opRecorder(file, who) {
  const put = (/** @type {Record<string, unknown>} */ line) => {
    if (file) fs.appendFileSync(file, `${JSON.stringify({ p: who.process, ...line })}\n`);
  };
  /** Group mode: leases taken by the current tick ('elected' fires only while a tick's answer is applied). */
  /** @type {[string, number][]} */
  let elected = [];

  return {
    /** @param {string} f @param {Record<string, unknown>} [fields] */
    note(f, fields = {}) {
      put({ f, at: now(), ...fields });
    },

    /**
     * Follows a LeaderElector (`ns` given) or a LeaderElectorGroup.
     * @param {import('events').EventEmitter} elector @param {string | undefined} ns
     */
    follow(elector, ns) {
      elector.on('elected', (/** @type {{ ns: string, term: number }} */ lease) => {
        if (ns === undefined) elected.push([lease.ns, lease.term]);
        // Before any claim of a slot under this term: a schedule's run of a leadership starts with it and reads the database first.
        put({ f: 'elected', at: now(), ns: lease.ns, term: lease.term });
      });
      elector.on('demoted', (/** @type {{ ns: string, term: number }} */ lease, /** @type {string} */ reason) => {
        put({ f: 'demoted', at: now(), ns: lease.ns, term: lease.term, reason });
      });
      elector.on('tick', (/** @type {any} */ tick) => {
        const ret = now();
        const durationMs = tick.durationSeconds * 1000;
        const skew = tick.clockSkew;
        // The elector's wall clock when it sent the statement, recovered from the skew it measured
        // (skew = databaseNow - (sentAt + duration / 2)): exact, unlike ret - duration, which is
        // late by the time the elector spent applying the answer before emitting the event.
        const inv = skew ? skew.databaseNow.getTime() - skew.seconds * 1000 - durationMs / 2 : ret - durationMs;
        const dbNow = skew ? skew.databaseNow.getTime() : null;
        if (ns !== undefined) {
          put({ f: 'tick', ns, inv, ret, outcome: tick.outcome, leaderId: tick.leaderId, term: tick.term, dbNow });
        } else {
          put({ f: 'gtick', inv, ret, ok: tick.error === null, dbNow, elected });
          elected = [];
        }
      });
    },

    /** @param {string} ns @param {number} term @param {number} seq */
    writeInvoked(ns, term, seq) {
      put({ f: 'write', type: 'invoke', ns, term, seq, at: now() });
    },

    /** @param {number} seq @param {'committed' | 'refused' | 'guard-refused' | 'error'} status @param {Record<string, unknown>} [fields] */
    writeReturned(seq, status, fields = {}) {
      put({ f: 'write', type: status, seq, at: now(), ...fields });
    },

    /**
     * A scheduled job began (its slot's claim had returned) and calls `run.transaction` at once.
     * @param {{ ns: string, name: string, slot: number, attempt: number, term: number }} run
     */
    jobStarted(run) {
      put({ f: 'job', type: 'start', ...run, at: now() });
    },

    /** @param {{ ns: string, name: string, slot: number, attempt: number }} run @param {'committed' | 'refused' | 'error'} status */
    jobReturned(run, status) {
      put({ f: 'job', type: status, ns: run.ns, name: run.name, slot: run.slot, attempt: run.attempt, at: now() });
    },
  };
}

module.exports = { opRecorder };
