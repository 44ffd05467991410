// @ts-check
'use strict';
/**
 * Check (r) of the chaos checker: the runs of the workers' schedule in one namespace, from the
 * ledger — whose triggers log every claim of a slot and every final state in the transaction that
 * made it, in the database's lock order, next to the lease changes and the jobs' own rows — and
 * from the runs table as it ended. A pure function of its input.
 *
 * - every claim, final state and job row was written under the live term of its writer: a slot
 *   claimed under term n after term n+1 was granted (or by a holder that vacated) is a violation
 *   (an `abandoned` row keeps the term of the run it ends: the later term's claim that wrote it
 *   must be current);
 * - a slot's claims are attempts 1, 2, 3, … in order, each under a later term than the one before,
 *   and none after the slot reached a final state;
 * - a slot is `done` at most once, under its last claim;
 * - a job row's slot is `done`, under the term and attempt of the row; a `done` slot has exactly
 *   one job row (the job writes in `run.transaction`: its row and `done` commit together);
 * - the runs table holds, for every slot the ledger saw, its last claim and final state, and no
 *   slot the ledger did not see.
 */

/**
 * @typedef {import('./database').LedgerRow} LedgerRow
 * @typedef {{ ns: string, name: string, slot: number, state: string, attempt: number, term: number, candidateId: string }} RunRow
 * @typedef {{ claims: LedgerRow[], finishes: LedgerRow[], jobs: LedgerRow[] }} SlotEvents
 */

/** The ledger kinds this check reads. */
const RUN_KINDS = ['claim', 'finish', 'job'];

const slotKey = (/** @type {string | null | undefined} */ name, /** @type {number | null | undefined} */ slot) => `${name}\u0000${slot}`;
const slotText = (/** @type {string | null | undefined} */ name, /** @type {number | null | undefined} */ slot) =>
  `slot ${Number.isFinite(slot) ? new Date(Number(slot)).toISOString() : slot} of ${JSON.stringify(name)}`;

/**
 * @param {{ ledger: LedgerRow[], ns: string, runs?: RunRow[], requireClaims?: boolean }} input
 *   `ledger`: every row, in id order (others than `ns`'s are ignored); `runs`: the runs table at
 *   the end (omitted: not compared); `requireClaims`: a namespace without any claim fails.
 * @returns {{ violations: string[], detail: string, stats: Record<string, number> }}
 */
function checkRuns(input) {
  const ledger = input.ledger.filter((r) => r.ns === input.ns);
  /** @type {string[]} */
  const violations = [];
  /** @type {Map<string, SlotEvents>} */
  const slots = new Map();
  const eventsOf = (/** @type {LedgerRow} */ row) => {
    const key = slotKey(row.name, row.slot);
    let events = slots.get(key);
    if (!events) slots.set(key, (events = { claims: [], finishes: [], jobs: [] }));
    return events;
  };

  // The lease register as the ledger replays it, and each run row against it.
  let term = 0;
  /** @type {string | null} */
  let holder = null;
  let vacated = true;
  for (const row of ledger) {
    if (row.kind === 'grant') {
      term = row.term;
      holder = row.holder;
      vacated = false;
    } else if (row.kind === 'vacate') {
      vacated = true;
    } else if (RUN_KINDS.includes(row.kind)) {
      const what = `ledger #${row.id}: ${row.kind === 'claim' ? `attempt ${row.attempt} claimed` : row.kind === 'job' ? 'a job row written' : `${row.state} recorded`} for ${slotText(row.name, row.slot)} by ${row.holder} under term ${row.term}`;
      // A slot is abandoned by a claim of a later term, or of the same one retaking what an earlier
      // leadership of that term left running; its row keeps the term and candidate of the run it ends.
      const abandoned = row.kind === 'finish' && row.state === 'abandoned';
      if (abandoned) {
        if (row.term > term) violations.push(`${what}: abandoned under a term never granted (the leader row is at term ${term})`);
      } else if (row.term < term) violations.push(`${what} after term ${term} was granted`);
      else if (row.term > term) violations.push(`${what}, which was never granted (the leader row is at term ${term})`);
      else if (row.holder !== holder) violations.push(`${what}, which ${holder} holds`);
      else if (vacated) violations.push(`${what} after that term was vacated`);
      const events = eventsOf(row);
      if (row.kind === 'claim') events.claims.push(row);
      else if (row.kind === 'finish') events.finishes.push(row);
      else events.jobs.push(row);
    }
  }

  // Each slot on its own: its claims, its final state, its job rows.
  /** @type {Record<string, number>} */
  const states = {};
  let jobRows = 0;
  let reclaims = 0;
  for (const { claims, finishes, jobs } of slots.values()) {
    const first = claims[0] ?? finishes[0] ?? jobs[0];
    const where = slotText(first.name, first.slot);
    jobRows += jobs.length;
    claims.forEach((claim, i) => {
      const previous = claims[i - 1];
      const expected = previous ? Number(previous.attempt) + 1 : 1;
      if (claim.attempt !== expected) violations.push(`${where}: attempt ${claim.attempt} claimed (ledger #${claim.id})${previous ? ` after attempt ${previous.attempt}` : ' as its first claim'}, expected attempt ${expected}`);
      // The same term retakes a slot an earlier leadership of that term (demoted locally, its lease renewed) left running.
      if (previous && claim.term < previous.term) violations.push(`${where}: attempt ${claim.attempt} claimed under term ${claim.term}, older than attempt ${previous.attempt}'s term ${previous.term}`);
      if (i > 0) reclaims++;
      const ended = finishes.find((f) => f.id < claim.id);
      if (ended) violations.push(`${where}: claimed again (ledger #${claim.id}) after it was recorded ${ended.state} (ledger #${ended.id})`);
    });
    const done = finishes.filter((f) => f.state === 'done');
    if (done.length > 1) violations.push(`${where}: completed done ${done.length} times (ledger ${done.map((d) => `#${d.id}`).join(', ')})`);
    if (finishes.length > 1 && done.length <= 1) violations.push(`${where}: recorded final ${finishes.length} times (${finishes.map((f) => f.state).join(', ')})`);
    const final = finishes[finishes.length - 1];
    // A slot whose last record is a claim was still running at the end (or left running by a leadership that ended).
    const state = final ? String(final.state) : 'running';
    states[state] = (states[state] ?? 0) + 1;
    const lastClaim = claims.filter((c) => !final || c.id < final.id).pop();
    for (const d of done) {
      if (!lastClaim) violations.push(`${where}: done (ledger #${d.id}) without a claim`);
      else if (d.term !== lastClaim.term || d.attempt !== lastClaim.attempt || d.holder !== lastClaim.holder) {
        violations.push(`${where}: done under term ${d.term}, attempt ${d.attempt}, but its last claim was attempt ${lastClaim.attempt} under term ${lastClaim.term}`);
      }
    }
    if (done.length === 0) {
      for (const j of jobs) violations.push(`${where}: a job row (ledger #${j.id}, term ${j.term}, attempt ${j.attempt}) whose slot is not done (${final ? final.state : 'no final state'})`);
    } else {
      if (jobs.length !== 1) violations.push(`${where}: done with ${jobs.length} job rows (exactly one must commit with it)`);
      for (const j of jobs) {
        if (j.term !== done[0].term || j.attempt !== done[0].attempt) violations.push(`${where}: a job row of term ${j.term}, attempt ${j.attempt}, but the slot was done under term ${done[0].term}, attempt ${done[0].attempt}`);
      }
    }
  }

  // The runs table as it ended: each slot's last claim and final state, as the ledger logged them.
  let runRows = 0;
  if (input.runs) {
    const runs = input.runs.filter((r) => r.ns === input.ns);
    runRows = runs.length;
    const seen = new Set();
    for (const run of runs) {
      const key = slotKey(run.name, run.slot);
      seen.add(key);
      const events = slots.get(key);
      const where = `the runs table's ${slotText(run.name, run.slot)}`;
      if (!events) {
        violations.push(`${where} (${run.state}, term ${run.term}) never appeared in the ledger`);
        continue;
      }
      const last = [...events.claims, ...events.finishes].sort((x, y) => x.id - y.id).pop();
      if (!last) continue; // job rows alone: reported above
      const state = last.kind === 'claim' ? 'running' : last.state;
      if (run.state !== state || run.attempt !== last.attempt || run.term !== last.term || run.candidateId !== last.holder) {
        violations.push(`${where} is ${run.state}, attempt ${run.attempt}, term ${run.term} by ${run.candidateId}; the ledger's last record of it is ${state}, attempt ${last.attempt}, term ${last.term} by ${last.holder}`);
      }
    }
    for (const [key, events] of slots) {
      const row = [...events.claims, ...events.finishes][0];
      if (row && !seen.has(key)) violations.push(`${slotText(row.name, row.slot)}: in the ledger (ledger #${row.id}) but not in the runs table`);
    }
  }

  const claims = [...slots.values()].reduce((n, s) => n + s.claims.length, 0);
  if (claims === 0 && input.requireClaims) violations.push('no slot was claimed: nothing to check');
  const stats = { claims, reclaims, slots: slots.size, doneSlots: states.done ?? 0, jobRows, runRows, ...Object.fromEntries(Object.entries(states).filter(([s]) => s !== 'done').map(([s, n]) => [`${s}Slots`, n])) };
  const others = Object.entries(states).filter(([s]) => s !== 'done').map(([s, n]) => `${n} ${s}`);
  const detail = `${claims} claims of ${slots.size} slots (${reclaims} re-claims after a lost leader), ${stats.doneSlots} done${others.length ? `, ${others.join(', ')}` : ''}; ${jobRows} job rows${input.runs ? `; ${runRows} rows in the runs table` : ''}`;
  return { violations, detail, stats };
}

module.exports = { checkRuns, RUN_KINDS };
