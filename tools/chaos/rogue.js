// @ts-check
'use strict';
/**
 * The rogue of a guarded chaos run (`--guarded`): a process of the application that never leads
 * and writes the guarded ledger anyway, as a script run by hand or a replica that ignores
 * `isLeader` would. Every CHAOS_WORK_MS it tries one of: a write with no fence at all; a write
 * after `assertLeader` threw `NotLeaderError` (code that catches the error and goes on); a write
 * naming the live leader's candidate and term (a copy of someone else's identity, without its
 * proof). Each attempt and its outcome go to CHAOS_LOG; the runner's check (u) needs every one
 * refused and none of its rows in the table.
 *
 * Environment: CHAOS_URL (straight to the database), CHAOS_NS, CHAOS_CANDIDATE_ID, CHAOS_WORK_MS, CHAOS_LOG.
 */
const fs = require('fs');
const { initDb, ElectionService, NotLeaderError } = require('gemstone-utils');
const { kindOfUrl, guardedInsert, isGuardRefusal } = require('./database');

const env = process.env;
const url = /** @type {string} */ (env.CHAOS_URL);
const ns = env.CHAOS_NS || 'chaos';
const candidateId = /** @type {string} */ (env.CHAOS_CANDIDATE_ID);
const workMs = Number(env.CHAOS_WORK_MS || 100);
const logFile = /** @type {string} */ (env.CHAOS_LOG);
const ROGUE_SLOT = -1;

/** @param {string} ev @param {Record<string, unknown>} fields */
const log = (ev, fields = {}) => fs.appendFileSync(logFile, `${JSON.stringify({ t: Date.now(), ev, ...fields })}\n`);
const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const ds = await initDb(url, { createTables: false });
  const service = new ElectionService(ds);
  const insert = guardedInsert(kindOfUrl(url));
  let stopping = false;
  process.on('SIGTERM', () => (stopping = true));
  log('rogue-start', { candidateId });
  const ways = /** @type {const} */ (['no fence', 'ignored NotLeaderError', 'the leader\'s identity']);
  for (let attempt = 0; !stopping; attempt++) {
    const way = ways[attempt % ways.length];
    const runner = ds.createQueryRunner();
    try {
      let holder = candidateId;
      let term = 0;
      if (way === 'the leader\'s identity') {
        // Read before the transaction opens: on SQLite a library call without a session waits for the shared connection.
        const leader = await service.getLeader({ ns });
        holder = leader?.leaderId ?? candidateId;
        term = leader?.term ?? 0;
      }
      await runner.connect();
      await runner.startTransaction();
      if (way === 'ignored NotLeaderError') {
        await service.assertLeader(candidateId, { ns, session: runner }).catch((error) => {
          if (!(error instanceof NotLeaderError)) throw error;
        });
      }
      await runner.query(insert, [ns, term, holder, ROGUE_SLOT, attempt]);
      await runner.commitTransaction();
      log('rogue-committed', { attempt, way, holder, term });
    } catch (error) {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      log(isGuardRefusal(error) ? 'rogue-refused' : 'rogue-error', { attempt, way, message: error instanceof Error ? error.message.slice(0, 200) : String(error) });
    } finally {
      await runner.release().catch(() => undefined);
    }
    await sleep(workMs);
  }
  await ds.destroy();
  log('rogue-stop');
}

main().catch((error) => {
  log('rogue-crash', { message: error instanceof Error ? error.stack : String(error) });
  process.exitCode = 1;
});
