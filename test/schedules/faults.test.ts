/**
 * Schedules under faults, across processes (test/support/workers/schedule-worker.js on dist/):
 * three workers whose application clocks are skewed by −2.5 s, 0 and +2.5 s run an every-second
 * schedule with `catchUp: 'all'` and one with `'latest'`, each job writing a ledger row inside
 * `run.transaction`. The leader is SIGKILLed (a process restarted in its place), SIGSTOPped past
 * its lease (then continued) and SIGTERMed (handleSignals; restarted). From the database: with
 * `'all'` every slot between the first and the last ledger row has exactly one row; with
 * `'latest'` at most one, and the others are recorded `missed`; each row's slot is `done` under
 * the row's term; no row was written under an older term than an earlier-written row's (fence).
 * GEMSTONE_SCHEDULE_FAULTS_LONG=1 repeats the faults for several rounds.
 */
import * as path from 'path';
import type { DataSource } from 'typeorm';
import type { ScheduledRunInfo } from 'gemstone-utils';
import { describeEachDatabase, query, sleep, TestDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { leaderRowLocked } from '../elector/db-admin';
import { WorkerLine, WorkerProcess } from '../elector/worker-process';
import { runsOf } from './helpers';

const EVERY = 1000;
const EXPIRE = 3;
const INTERVAL = 300;
const LEASE_MS = EXPIRE * 1000;
/** A loaded shared machine: added to every upper bound. */
const SLACK_MS = 5_000;
const SKEWS = [-2_500, 0, 2_500] as const;
const LONG = process.env.GEMSTONE_SCHEDULE_FAULTS_LONG === '1';
const ROUNDS = LONG ? 8 : 2;
/** A fault's outage: the lease runs out (renewed at most a tick before), the next tick takes over, its first slot commits. */
const TAKEOVER_MS = LEASE_MS + INTERVAL * 1.1 + EVERY + SLACK_MS;
/** Each job waits this long before its transaction: the window a pause lands in (see the SIGSTOP). */
const JOB_DELAY_MS = 300;
const WORKERS = path.join(__dirname, '..', 'support', 'workers');

type Schedule = { name: string; catchUp: 'all' | 'latest' };
const SCHEDULES: readonly Schedule[] = [
  { name: 'all', catchUp: 'all' },
  { name: 'latest', catchUp: 'latest' },
];

function ledgerDdl(kind: TestDatabase['kind'], table: string): string {
  const id =
    kind === 'postgres' ? 'id BIGSERIAL PRIMARY KEY' : kind === 'mariadb' ? 'id BIGINT AUTO_INCREMENT PRIMARY KEY' : 'id INTEGER PRIMARY KEY AUTOINCREMENT';
  return `CREATE TABLE ${table} (${id}, ns VARCHAR(64) NOT NULL, name VARCHAR(16) NOT NULL, slot_ms BIGINT NOT NULL, term INT NOT NULL, candidate_id VARCHAR(36) NOT NULL)`;
}

interface LedgerRow {
  id: number;
  slot: number;
  term: number;
  candidateId: string;
}

/** What one schedule's rows say, and what the table printed per run shows. */
interface Verdict {
  schedule: string;
  ledgerRows: number;
  slots: number;
  duplicates: number;
  /** Slots in the range with no ledger row and not recorded `missed`. */
  misses: number;
  missedRecorded: number;
  /** Ledger rows whose slot is not `done` under the row's term and candidate. */
  notDone: number;
  /** Ledger rows written (by id) under a term older than an earlier-written row's. */
  fenceViolations: number;
  /** Runs in the range neither `done` nor `missed`. */
  otherStates: number;
}

function judge(schedule: string, ledger: readonly LedgerRow[], runs: readonly ScheduledRunInfo[]): Verdict {
  const bySlot = new Map<number, LedgerRow[]>();
  for (const row of ledger) bySlot.set(row.slot, [...(bySlot.get(row.slot) ?? []), row]);
  const runBySlot = new Map(runs.map((r) => [r.slot.getTime(), r]));
  const slots = [...bySlot.keys()];
  const first = Math.min(...slots);
  const last = Math.max(...slots);
  let duplicates = 0;
  let misses = 0;
  let missedRecorded = 0;
  let otherStates = 0;
  for (let slot = first; slot <= last; slot += EVERY) {
    const rows = bySlot.get(slot) ?? [];
    const run = runBySlot.get(slot);
    if (rows.length > 1) duplicates += rows.length - 1;
    if (run?.state === 'missed') missedRecorded++;
    if (rows.length === 0 && run?.state !== 'missed') misses++;
    if (run && run.state !== 'done' && run.state !== 'missed') otherStates++;
  }
  const notDone = ledger.filter((row) => {
    const run = runBySlot.get(row.slot);
    return run?.state !== 'done' || run.term !== row.term || run.candidateId !== row.candidateId;
  }).length;
  let fenceViolations = 0;
  let newest = 0;
  for (const row of [...ledger].sort((a, b) => a.id - b.id)) {
    if (row.term < newest) fenceViolations++;
    newest = Math.max(newest, row.term);
  }
  return { schedule, ledgerRows: ledger.length, slots: (last - first) / EVERY + 1, duplicates, misses, missedRecorded, notDone, fenceViolations, otherStates };
}

describeEachDatabase(
  'schedules under faults across processes with skewed app clocks',
  (db) => {
    let ds: DataSource;
    const workers: WorkerProcess[] = [];

    beforeAll(async () => {
      ds = await db.connect();
    });
    afterEach(async () => {
      await Promise.all(workers.splice(0).map((w) => w.shutdown()));
    });

    test(
      `SIGKILL, SIGSTOP past the lease and SIGTERM of the leader (${ROUNDS} round(s)): every slot once (all), documented misses (latest), fenced`,
      async () => {
        const started = Date.now();
        const ns = freshNs();
        const ledger = `sched_ledger_${Math.random().toString(36).slice(2, 10)}`;
        await query(ds, ledgerDdl(db.kind, ledger));
        const skewOf = new Map<WorkerProcess, number>();
        const termsBy = new Map<number, number>();

        async function spawn(skew: number): Promise<WorkerProcess> {
          const config = { url: db.url(), ns, expireSeconds: EXPIRE, intervalMs: INTERVAL, handleSignals: true, ledger, everyMs: EVERY, schedules: SCHEDULES, jobDelayMs: JOB_DELAY_MS };
          const w = new WorkerProcess(config, {
            script: path.join(WORKERS, 'schedule-worker.js'),
            preload: [path.join(WORKERS, 'skewed-clock.js')],
            env: { GEMSTONE_TEST_CLOCK_SKEW_MS: String(skew) },
          });
          workers.push(w);
          skewOf.set(w, skew);
          const ready = await w.ready();
          // The skew is in effect: the application's clock is off the real one by it.
          expect(Math.abs(Number(ready.appNow) - ready.t - skew)).toBeLessThan(1_000);
          return w;
        }

        const live = () => workers.filter((w) => w.alive);
        /** The term a worker believes it leads under, from its own reports. */
        const believed = (w: WorkerProcess): number | undefined => {
          const last = w.lines.filter((l) => l.event === 'elected' || l.event === 'demoted').at(-1);
          return last?.event === 'elected' ? Number(last.term) : undefined;
        };
        const committedUnder = (w: WorkerProcess, term: number) => w.lines.some((l) => l.event === 'committed' && l.term === term);

        /** The leader known from the workers' output: the newest term believed, whose schedules committed under it. */
        async function leader(): Promise<{ w: WorkerProcess; term: number }> {
          const deadline = Date.now() + TAKEOVER_MS;
          for (;;) {
            const leading = live()
              .map((w) => ({ w, term: believed(w) }))
              .filter((x): x is { w: WorkerProcess; term: number } => x.term !== undefined)
              .sort((a, b) => b.term - a.term)[0];
            if (leading && committedUnder(leading.w, leading.term)) return leading;
            if (Date.now() > deadline) throw new Error(`no leader known from the workers' output\n${dump()}`);
            await sleep(20);
          }
        }

        /** Another worker leads under a newer term than `term` and its schedules committed under it. */
        async function takeover(from: WorkerProcess, term: number, what: string): Promise<{ w: WorkerProcess; term: number; ms: number }> {
          const at = Date.now();
          for (;;) {
            for (const w of live()) {
              if (w === from) continue;
              const mine = believed(w);
              if (mine !== undefined && mine > term && committedUnder(w, mine)) {
                termsBy.set(mine, skewOf.get(w)!);
                return { w, term: mine, ms: Date.now() - at };
              }
            }
            if (Date.now() - at > TAKEOVER_MS) throw new Error(`no takeover after ${what} within ${TAKEOVER_MS} ms\n${dump()}`);
            await sleep(20);
          }
        }

        /** A job `w` started under `term` (at line `from` or later) and has not finished. */
        function unfinished(w: WorkerProcess, term: number, from: number): WorkerLine | undefined {
          const lines = w.lines.slice(from);
          const ended = (run: WorkerLine) => lines.some((l) => (l.event === 'committed' || l.event === 'rolled-back') && l.name === run.name && l.slot === run.slot);
          return lines.find((l) => l.event === 'run' && l.term === term && !ended(l));
        }

        function dump(): string {
          return workers
            .map((w) => `worker ${w.pid} skew ${skewOf.get(w)} alive ${w.alive}:\n${w.lines.map((l: WorkerLine) => JSON.stringify(l)).join('\n')}\n${w.stderr.join('')}`)
            .join('\n');
        }

        for (const skew of SKEWS) await spawn(skew);
        const faults: string[] = [];
        let staleRejected = 0;
        for (let round = 0; round < ROUNDS; round++) {
          // SIGKILL: the lease runs out, another process takes over; a new process in its place.
          let current = await leader();
          termsBy.set(current.term, skewOf.get(current.w)!);
          current.w.signal('SIGKILL');
          let next = await takeover(current.w, current.term, 'SIGKILL');
          faults.push(`KILL ${next.ms}`);
          expect((await current.w.exited).signal).toBe('SIGKILL');
          await spawn(skewOf.get(current.w)!);

          // SIGSTOP past the lease, paused inside a job (before its transaction) while it holds no
          // lock: paused inside a transaction it would block everyone, and nobody could take over
          // until it continues. The job's transaction then runs under the stale term.
          let inFlight: WorkerLine | undefined;
          let stoppedAt = 0;
          for (let attempt = 0; ; attempt++) {
            current = await leader();
            const from = current.w.lines.length;
            await current.w.waitFor('a job to start', (l) => l.event === 'run' && l.term === current.term, TAKEOVER_MS, from);
            stoppedAt = Date.now();
            current.w.signal('SIGSTOP');
            await sleep(40);
            inFlight = unfinished(current.w, current.term, from);
            if (inFlight && believed(current.w) === current.term && !(await leaderRowLocked(db, ns))) break;
            current.w.signal('SIGCONT');
            if (attempt > 30) throw new Error(`the leader was never paused inside a job holding no lock\n${dump()}`);
            await sleep(Math.random() * 200);
          }
          const mark = current.w.lines.length;
          next = await takeover(current.w, current.term, 'SIGSTOP');
          faults.push(`STOP ${next.ms}`);
          const continuedAt = Date.now();
          current.w.signal('SIGCONT');
          // It finds its lease gone on its next tick, before it does any leader work.
          await current.w.waitFor('the paused leader to demote itself', (l) => l.event === 'demoted' && l.term === current.term, LEASE_MS + SLACK_MS, mark);
          // The job it was paused in meets the fence: its row rolls back (the next leader runs the slot again).
          const paused = inFlight;
          await current.w.waitFor('the paused job to roll back', (l) => l.event === 'rolled-back' && l.name === paused.name && l.slot === paused.slot, JOB_DELAY_MS + SLACK_MS, mark);
          // Nothing of the old term committed after the pause: judged by when the job's statement
          // ran (the worker's clock, this host's), not by when its line was read here — a job that
          // committed before the pause may have its line still in the pipe at the mark. A
          // transaction open across the pause would have held the leader row's lock, which it
          // did not; the pause lasted a lease, so half of it parts before from after.
          const afterPause = (stoppedAt + continuedAt) / 2;
          expect(current.w.lines.filter((l) => l.event === 'committed' && l.term === current.term && Number(l['wroteAt']) > afterPause)).toEqual([]);
          staleRejected += current.w.events('rolled-back', mark).length;

          // SIGTERM with handleSignals: it hands over at once and exits by the signal; a new process in its place.
          current = await leader();
          current.w.signal('SIGTERM');
          next = await takeover(current.w, current.term, 'SIGTERM');
          faults.push(`TERM ${next.ms}`);
          expect(await current.w.exited).toEqual({ code: null, signal: 'SIGTERM' });
          await spawn(skewOf.get(current.w)!);
        }
        // A few slots under the last leader, then every process stops.
        await leader();
        await sleep(EVERY * 2);
        await Promise.all(workers.splice(0).map((w) => w.shutdown()));

        const rows = await query<{ id: number | string; name: string; slot_ms: number | string; term: number | string; candidate_id: string }>(
          ds,
          `SELECT id, name, slot_ms, term, candidate_id FROM ${ledger} WHERE ns = ? ORDER BY id`,
          [ns],
        );
        const verdicts: Verdict[] = [];
        for (const { name } of SCHEDULES) {
          const mine = rows
            .filter((r) => r.name === name)
            .map((r) => ({ id: Number(r.id), slot: Number(r.slot_ms), term: Number(r.term), candidateId: r.candidate_id }));
          verdicts.push(judge(name, mine, await runsOf(ds, ns, name)));
        }
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        const leaders = [...termsBy.entries()].sort((a, b) => a[0] - b[0]).map(([term, skew]) => `${term}:${skew > 0 ? '+' : ''}${skew / 1000}s`);
        process.stdout.write(
          [
            `\nschedules under faults [${db.name}], ${ROUNDS} round(s), ${seconds} s; takeovers (ms): ${faults.join(', ')}; leaders (term:skew): ${leaders.join(' ')}; stale runs rolled back: ${staleRejected}`,
            '| database | schedule | slots | ledger rows | duplicates | misses | missed recorded | not done | fence violations |',
            '|---|---|---|---|---|---|---|---|---|',
            ...verdicts.map(
              (v) => `| ${db.name} | ${v.schedule} | ${v.slots} | ${v.ledgerRows} | ${v.duplicates} | ${v.misses} | ${v.missedRecorded} | ${v.notDone} | ${v.fenceViolations} |`,
            ),
            '',
          ].join('\n'),
        );

        const [all, latest] = verdicts as [Verdict, Verdict];
        // 'all': every slot between the first and the last row exactly once, each done under its row's term.
        expect(all).toMatchObject({ duplicates: 0, misses: 0, missedRecorded: 0, notDone: 0, fenceViolations: 0, otherStates: 0 });
        expect(all.ledgerRows).toBe(all.slots);
        // Slots ran through every outage: at least the faults' takeovers' worth of seconds.
        expect(all.slots).toBeGreaterThanOrEqual(ROUNDS * 2 * (LEASE_MS / EVERY - 1));
        // 'latest': never twice; every slot not run is recorded missed — at least one per outage
        // of a lease (SIGKILL, SIGSTOP: two or more slots come due while nobody leads, the newest runs).
        expect(latest).toMatchObject({ duplicates: 0, misses: 0, notDone: 0, fenceViolations: 0, otherStates: 0 });
        expect(latest.missedRecorded).toBeGreaterThanOrEqual(ROUNDS * 2);
        expect(latest.ledgerRows + latest.missedRecorded).toBe(latest.slots);
        // Each pause left a job whose transaction met the fence.
        expect(staleRejected).toBeGreaterThanOrEqual(ROUNDS);
      },
      ROUNDS * 90_000 + 30_000,
    );
  },
  { sharedOnly: true },
);
