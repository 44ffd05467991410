// @ts-check
'use strict';
/**
 * (u) of a guarded run (`--guarded`): the database refused every write that did not prove the live
 * leadership in its transaction, and nothing else.
 * - Every row of the guarded ledger has its ledger `write` row and the other way round (the two
 *   are written in one transaction): what (a) and the linearizability check judge is exactly what
 *   the guarded table holds.
 * - No action that skipped `assertLeader` committed; each of them ended refused by the table, or
 *   without the table's answer (an error of its connection under a fault, or its process killed or
 *   stopped mid-action) and without a row in the table.
 * - The rogue, which never leads, tried and was refused every time; none of its rows is there.
 */
const { OUTCOMES } = require('./checker');

/** The rogue's rows carry this worker slot. */
const ROGUE_SLOT = -1;

/**
 * @param {{ ns: string, guardedRows: { ns: string, term: number, holder: string, worker: number, seq: number }[],
 *   ledger: import('./database').LedgerRow[], events: import('./checker').WorkerEvent[], rogueEvents: { ev: string, way?: string }[] }} input
 * @returns {{ check: { id: string, name: string, ok: boolean, detail: string, violations: string[] },
 *   stats: { guardedRows: number, fenceSkipped: number, skippedRefused: number, skippedUnfinished: number, rogueAttempts: number, rogueRefused: number, rogueErrors: number } }}
 */
function checkGuarded({ ns, guardedRows, ledger, events, rogueEvents }) {
  /** @type {string[]} */
  const violations = [];
  const key = (/** @type {string | null} */ holder, /** @type {number | null} */ seq) => `${holder}\u0000${seq}`;
  const writes = ledger.filter((r) => r.kind === 'write' && r.ns === ns);
  const writeKeys = new Set(writes.map((w) => key(w.holder, w.seq)));
  const ownRows = guardedRows.filter((g) => g.worker !== ROGUE_SLOT);
  const guardedKeys = new Set(ownRows.map((g) => key(g.holder, g.seq)));
  for (const g of guardedRows.filter((r) => r.worker === ROGUE_SLOT)) violations.push(`the rogue committed a row (as ${g.holder}, term ${g.term})`);
  for (const g of ownRows) if (!writeKeys.has(key(g.holder, g.seq))) violations.push(`guarded row of ${g.holder} seq ${g.seq} (term ${g.term}) has no ledger write`);
  for (const w of writes) if (!guardedKeys.has(key(w.holder, w.seq))) violations.push(`ledger write of ${w.holder} seq ${w.seq} (term ${w.term}) has no guarded row`);

  const skipped = events.filter((e) => e.ev === 'fence-skipped');
  /** Each worker process's candidate id, from its 'start' line. */
  const candidateOf = new Map(events.filter((e) => e.ev === 'start').map((e) => [`${e.slot}/${e.incarnation}`, String(e.candidateId)]));
  let skippedRefused = 0;
  let skippedUnfinished = 0;
  for (const s of skipped) {
    const outcome = events.find((e) => e.slot === s.slot && e.incarnation === s.incarnation && e.seq === s.seq && OUTCOMES.includes(e.ev));
    if (outcome?.ev === 'action-guard-refused') skippedRefused++;
    else if (outcome?.ev === 'action-commit') violations.push(`worker ${s.slot}/${s.incarnation} skipped assertLeader (seq ${s.seq}, term ${s.term}) and committed`);
    else {
      // An error of its connection (a fault), or its process ended mid-action (killed, stopped):
      // what it left is in the table, or nothing.
      skippedUnfinished++;
      if (guardedKeys.has(key(candidateOf.get(`${s.slot}/${s.incarnation}`) ?? null, Number(s.seq)))) violations.push(`worker ${s.slot}/${s.incarnation} skipped assertLeader (seq ${s.seq}, term ${s.term}): its row is in the table`);
    }
  }
  if (skipped.length === 0) violations.push('no action skipped assertLeader: nothing to check');

  const attempts = rogueEvents.filter((e) => e.ev === 'rogue-refused' || e.ev === 'rogue-committed' || e.ev === 'rogue-error');
  const rogueRefused = attempts.filter((e) => e.ev === 'rogue-refused').length;
  // An error without the table's answer (a restarted server, say) is no violation: its row would be in the table.
  for (const e of rogueEvents.filter((r) => r.ev === 'rogue-committed' || r.ev === 'rogue-crash').slice(0, 10)) violations.push(`the rogue: ${e.ev} (${e.way ?? ''})`);
  const rogueErrors = attempts.filter((e) => e.ev === 'rogue-error').length;
  const ways = new Set(attempts.map((e) => e.way));
  if (ways.size < 3) violations.push(`the rogue tried ${ways.size} of its 3 ways: nothing to check`);

  return {
    check: {
      id: 'u',
      name: 'guarded ledger: every write without a proof in its transaction refused by the database (skipped fences, the rogue); its rows are the ledger\'s writes',
      ok: violations.length === 0,
      detail:
        `${ownRows.length} guarded rows = ${writes.length} ledger writes; ${skipped.length} actions skipped assertLeader, ${skippedRefused} refused by the table` +
        `${skippedUnfinished ? `, ${skippedUnfinished} ended without its answer (a connection error or their process ended; no row)` : ''}; ` +
        `the rogue tried ${attempts.length} times (${[...ways].join(', ')}), ${rogueRefused} refused${rogueErrors ? `, ${rogueErrors} ended in an error of its connection (no row)` : ''}`,
      violations: violations.slice(0, 20),
    },
    stats: { guardedRows: ownRows.length, fenceSkipped: skipped.length, skippedRefused, skippedUnfinished, rogueAttempts: attempts.length, rogueRefused, rogueErrors },
  };
}

module.exports = { checkGuarded, ROGUE_SLOT };
