/**
 * SQLite under write-lock contention: another process keeps taking the database write lock
 * (BEGIN IMMEDIATE … a few milliseconds … COMMIT), so the library's own BEGIN IMMEDIATE is often
 * busy, while electors, groups and direct calls elect, renew, resign, hand over, unregister and
 * vacate on two DataSources of the file. Every program is all-or-nothing, so afterwards, per
 * namespace: the history is gapless (terms 1..n), no term but the current one is open, a vacant
 * lease has no open term, terms never overlap; every acquisition is reported as one (`acquired`)
 * exactly once, and nobody is told of a term it did not acquire.
 */
import { ChildProcess, spawn } from 'child_process';
import type { Logger } from 'typeorm';
import { ElectionService, LeaderElector, LeaderElectorGroup } from 'gemstone-utils';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';
import { packageDir } from '../support/packages';
import { ns as freshNs, instantMs } from '../support/rows';

const RUN_MS = 20_000;
const LEASE_SECONDS = 2;
const TICK_MS = 300;

/**
 * The lock holder, in a process of its own (two copies of SQLite in one process do not see each
 * other's locks). Prints how many times it held the lock when stdin closes.
 */
const HOLDER = `
const Database = require(process.argv[1]);
const db = new Database(process.argv[2], { timeout: 5000 });
const pause = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms) => Atomics.wait(pause, 0, 0, ms);
let held = 0;
let open = true;
process.stdin.on('end', () => { open = false; });
process.stdin.resume();
(function cycle() {
  if (!open) { console.log(JSON.stringify({ held })); db.close(); return; }
  try {
    db.exec('BEGIN IMMEDIATE');
    sleep(2 + Math.random() * 13);
    db.exec('COMMIT');
    held++;
  } catch {
    try { db.exec('ROLLBACK'); } catch {}
  }
  setTimeout(cycle, Math.random() * 8);
})();
`;

/** Counts the busy errors the library logs: the proof that its BEGIN met the lock. */
class BusyCounter implements Logger {
  busy = 0;
  logQuery(): void {}
  logQueryError(error: string | Error): void {
    if (/SQLITE_BUSY|database is locked/.test(String(error))) this.busy++;
  }
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

interface Acquisition {
  ns: string;
  term: number;
  by: string;
  via: string;
}

describeEachDatabase(
  'another process holding the write lock again and again',
  (db) => {
    let holder: ChildProcess | undefined;

    afterAll(() => {
      holder?.kill();
    });

    test(
      `${RUN_MS / 1000} s of electors, groups, resign, hand-over, unregister and vacate: all-or-nothing, gapless history, acquired right`,
      async () => {
        const counter = new BusyCounter();
        const ds1 = await db.connect({ logger: counter });
        const ds2 = await db.connect({ logger: counter });
        const file = db.url().slice('sqlite:'.length).split('?')[0]!;
        holder = spawn(process.execPath, ['-e', HOLDER, packageDir('better-sqlite3'), file], { stdio: ['pipe', 'pipe', 'inherit'] });
        let holderOutput = '';
        holder.stdout!.on('data', (chunk: Buffer) => (holderOutput += chunk.toString()));
        const holderDone = new Promise<void>((resolve) => holder!.on('exit', () => resolve()));

        const prefix = freshNs();
        const electorNs = [`${prefix}-e1`, `${prefix}-e2`];
        const groupNs = Array.from({ length: 6 }, (_, i) => `${prefix}-g${i}`);
        const directNs = `${prefix}-d`;
        const acquisitions: Acquisition[] = [];
        // Leaderships ended by their local deadline (a tick delayed past it on a loaded machine):
        // the same holder may be elected again under the same term, which the lease never left.
        const expiredLocally: Array<{ ns: string; term: number; by: string }> = [];
        const problems: string[] = [];
        let errors = 0;
        const deadline = Date.now() + RUN_MS;
        const running = () => Date.now() < deadline;
        const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

        // Electors: three per namespace, one of them of higher priority; one at a time stops
        // (hand-over by unregistering) and starts again.
        const electors = electorNs.flatMap((ns) =>
          [0, 0, 1].map((priority, i) => {
            const elector = new LeaderElector({ dataSource: i % 2 ? ds2 : ds1, ns, expireSeconds: LEASE_SECONDS, intervalMs: TICK_MS, priority });
            elector.on('elected', (lease) => acquisitions.push({ ns, term: lease.term, by: elector.candidateId, via: 'elector' }));
            elector.on('demoted', (lease, reason) => {
              if (reason === 'lease-expired-locally') expiredLocally.push({ ns, term: lease.term, by: elector.candidateId });
            });
            elector.on('error', () => errors++);
            return elector;
          }),
        );
        // Groups: two balancing groups; namespaces removed (vacated) and added back, groups stopped and started.
        const groups = [ds1, ds2].map((dataSource) => {
          const group = new LeaderElectorGroup({ dataSource, namespaces: groupNs, balance: true, expireSeconds: LEASE_SECONDS, intervalMs: TICK_MS });
          group.on('elected', (lease) => acquisitions.push({ ns: lease.ns, term: lease.term, by: group.candidateId, via: 'group' }));
          group.on('demoted', (lease, reason) => {
            if (reason === 'lease-expired-locally') expiredLocally.push({ ns: lease.ns, term: lease.term, by: group.candidateId });
          });
          group.on('error', () => errors++);
          return group;
        });
        await Promise.all([...electors.map((e) => e.start()), ...groups.map((g) => g.start())]);

        const churnElectors = (async () => {
          while (running()) {
            await sleep(400 + Math.random() * 800);
            const elector = pick(electors);
            await elector.stop();
            await sleep(Math.random() * 300);
            await elector.start();
          }
        })();
        const churnGroups = (async () => {
          while (running()) {
            await sleep(300 + Math.random() * 700);
            const group = pick(groups);
            if (Math.random() < 0.2) {
              await group.stop();
              await sleep(Math.random() * 300);
              await group.start();
            } else {
              const ns = pick(groupNs);
              await group.remove(ns);
              await sleep(Math.random() * 300);
              await group.add(ns);
            }
          }
        })();
        // Direct calls: two candidates elect; now and then the leader resigns, hands over or unregisters.
        const direct = [uuid(), uuid()].map(async (id, i) => {
          const svc = new ElectionService(i ? ds2 : ds1, { expireSeconds: LEASE_SECONDS });
          const mine = new Set<number>();
          while (running()) {
            try {
              const outcome = await svc.electOutcome(id, { ns: directNs });
              if (outcome.acquired) {
                mine.add(outcome.term);
                acquisitions.push({ ns: directNs, term: outcome.term, by: id, via: 'elect' });
              } else if (outcome.isLeader && !mine.has(outcome.term)) {
                problems.push(`${id} told it renewed term ${outcome.term}, which it never acquired`);
              }
              if (outcome.isLeader) {
                const roll = Math.random();
                if (roll < 0.15) await svc.resign(id, { ns: directNs });
                else if (roll < 0.3) await svc.handOver(id, { ns: directNs });
                else if (roll < 0.4) await svc.unregisterCandidate(id, { ns: directNs });
              }
            } catch {
              errors++;
            }
            await sleep(50 + Math.random() * 150);
          }
        });

        await Promise.all([churnElectors, churnGroups, ...direct]);
        await Promise.all([...electors.map((e) => e.stop()), ...groups.map((g) => g.stop())]);
        holder.stdin!.end();
        await holderDone;
        const held = Number((JSON.parse(holderOutput.trim() || '{}') as { held?: number }).held ?? 0);

        // The case under test happened: the lock was held often, and (sqlite3) the library's BEGIN
        // met it. better-sqlite3 waits for the lock inside SQLite's busy handler (250 ms at most),
        // so there the holder's few milliseconds seldom surface as errors.
        expect(held).toBeGreaterThan(100);
        if (!/better-sqlite3/.test(db.name)) expect(counter.busy).toBeGreaterThan(100);
        expect(acquisitions.length).toBeGreaterThan(20);

        const open: string[] = [];
        const gaps: string[] = [];
        for (const ns of [...electorNs, ...groupNs, directNs]) {
          const [leader] = await query<{ leader_id: string | null; term: number }>(ds1, 'SELECT leader_id, term FROM gemstone_election_leader WHERE ns = ?', [ns]);
          const history = await query<{ term: number; leader_id: string; acquired_at: string; ended_at: string | null }>(
            ds1,
            'SELECT term, leader_id, acquired_at, ended_at FROM gemstone_election_history WHERE ns = ? ORDER BY term',
            [ns],
          );
          const terms = history.map((h) => Number(h.term));
          const n = Number(leader?.term ?? 0);
          if (JSON.stringify(terms) !== JSON.stringify(Array.from({ length: n }, (_, i) => i + 1))) gaps.push(`${ns}: terms ${terms.join(',')} for leader term ${n}`);
          for (const h of history) {
            const current = Number(h.term) === n && leader?.leader_id === h.leader_id;
            if (h.ended_at === null && !current) open.push(`${ns} term ${h.term}${leader?.leader_id === null ? ' (lease vacant)' : ''}`);
          }
          for (let i = 1; i < history.length; i++) {
            const ended = history[i - 1]!.ended_at;
            if (ended !== null && instantMs(ended) > instantMs(history[i]!.acquired_at)) problems.push(`${ns}: term ${history[i - 1]!.term} overlaps term ${history[i]!.term}`);
          }
          // Every acquisition reported is a term of the history, held by whoever was told so, reported
          // once — again only by the same holder after a leadership of that term ended by its local
          // deadline (one repeat per such ending).
          const byTerm = new Map(history.map((h) => [Number(h.term), h.leader_id]));
          const seen = new Map<number, number>();
          for (const a of acquisitions.filter((x) => x.ns === ns)) {
            if (byTerm.get(a.term) !== a.by) problems.push(`${ns}: ${a.via} ${a.by} acquired term ${a.term}, history says ${byTerm.get(a.term) ?? 'nothing'}`);
            const times = (seen.get(a.term) ?? 0) + 1;
            seen.set(a.term, times);
            const endings = expiredLocally.filter((e) => e.ns === ns && e.term === a.term && e.by === a.by).length;
            if (times > 1 + endings) problems.push(`${ns}: term ${a.term} reported acquired ${times} times, ${endings} local expiries between`);
          }
        }
        // (For the report: how hard it was.)
        console.log(`${db.name}: lock held ${held} times, ${counter.busy} busy errors logged, ${acquisitions.length} acquisitions, ${errors} call/tick errors`);
        expect({ open, gaps, problems }).toEqual({ open: [], gaps: [], problems: [] });
      },
      RUN_MS + 60_000,
    );
  },
  { kinds: ['sqlite'], sharedOnly: true },
);
