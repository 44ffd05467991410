/**
 * The shrunk schedules of the defects the differential runs found (see known-defects.ts), replayed
 * on purpose on the databases they concern. While a defect is open its schedule must be REPORTED
 * by the harness (so the harness is shown to find it); once it is closed the schedule must pass.
 */
import { describeEachDatabase, type DbKind, type TestDatabase } from '../support/databases';
import { EXPIRE_SECONDS, runSchedule, type HoldWaits } from './harness';
import { DEFECTS, isOpen } from './known-defects';
import type { Schedule, Step } from './schedule';
import { openWorld, type SessionSettings, type World } from './world';

interface Regression {
  defect: number;
  title: string;
  kinds: readonly DbKind[];
  /** Only the sqlite3 driver on a file. */
  sqlite3File?: boolean;
  settings?: SessionSettings;
  hostile?: boolean;
  steps: Step[];
}

const plain = (c: number, ns = 0, proc = 0): Step => ({ op: 'elect', c, ns, fields: {}, path: 'plain', proc });

const REGRESSIONS: Regression[] = [
  {
    defect: 1,
    title: "the leader's one-statement renewal waits for its own fenced transaction past the lease's end and keeps the term",
    kinds: ['mariadb'],
    steps: [plain(0), { op: 'hold', holder: { kind: 'assert', c: 0, ns: 0, proc: 0 }, waiters: [plain(0)], lapse: false }],
  },
  {
    defect: 1,
    title: "the follower's one-statement elect waits for a rival's takeover past its lease's end and follows the lapsed lease",
    kinds: ['mariadb'],
    steps: [{ op: 'hold', holder: { kind: 'elect', c: 0, ns: 0, proc: 0 }, waiters: [plain(1)], lapse: false }],
  },
  {
    defect: 2,
    title: "a one-statement takeover after waiting for a rival's takeover leaves that term open",
    kinds: ['postgres'],
    steps: [plain(0), { op: 'hold', holder: { kind: 'elect', c: 0, ns: 0, proc: 0 }, waiters: [plain(1)], lapse: true }],
  },
  {
    defect: 3,
    title: 'with autocommit=0 the first elect fails',
    kinds: ['mariadb'],
    settings: ['SET SESSION autocommit = 0'],
    steps: [plain(0)],
  },
  {
    defect: 4,
    title: "a group tick beside its own candidate's fenced transaction leaves its own lease unrenewed",
    kinds: ['postgres', 'mariadb'],
    steps: [
      // The group has seen the namespace (MariaDB: it no longer inserts the row first, which would wait).
      { op: 'tick', c: 0, nss: [0], priority: 0, eligible: true, metadata: false, balance: false, release: [], reason: 'resigned', proc: 1 },
      {
        op: 'hold',
        holder: { kind: 'assert', c: 0, ns: 0, proc: 0 },
        waiters: [{ op: 'tick', c: 0, nss: [0], priority: 0, eligible: true, metadata: false, balance: false, release: [], reason: 'resigned', proc: 1 }],
        lapse: false,
      },
    ],
  },
  {
    defect: 5,
    title: 'with NO_BACKSLASH_ESCAPES a namespace with a quote after a backslash breaks the statement',
    kinds: ['mariadb'],
    settings: ["SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',NO_BACKSLASH_ESCAPES')"],
    hostile: true,
    steps: [plain(0)],
  },
  {
    defect: 6,
    title: 'a resign whose BEGIN IMMEDIATE met a busy database is applied, then retried and answered false',
    kinds: ['sqlite'],
    sqlite3File: true,
    steps: [plain(0), { op: 'busy', release: 1, step: { op: 'resign', c: 0, ns: 0, session: false, proc: 0 } }],
  },
  {
    defect: 6,
    title: 'a group tick whose BEGIN IMMEDIATE met a busy database is applied, then retried and reports its first heartbeat as already there',
    kinds: ['sqlite'],
    sqlite3File: true,
    steps: [
      {
        op: 'busy',
        release: 1,
        step: { op: 'tick', c: 0, nss: [0], priority: 0, eligible: true, metadata: false, balance: false, release: [], reason: 'resigned', proc: 0 },
      },
    ],
  },
  {
    defect: 7,
    title: "elect (read first, then the locked path) waits for a rival's lock past the lease's end and follows the lapsed lease",
    kinds: ['mariadb'],
    steps: [
      { op: 'tick', c: 0, nss: [0], priority: 0, eligible: false, metadata: false, balance: false, release: [], reason: 'resigned', proc: 0 },
      { op: 'hold', holder: { kind: 'elect', c: 1, ns: 0, proc: 0 }, waiters: [{ ...plain(2), path: 'idle' } as Step], lapse: false },
    ],
  },
  {
    defect: 7,
    title: "assertLeader waits for the leader's other fenced transaction past the lease's end and passes: a fenced write under a lapsed lease",
    kinds: ['mariadb'],
    steps: [plain(0), { op: 'hold', holder: { kind: 'assert', c: 0, ns: 0, proc: 0 }, waiters: [{ op: 'assert', c: 0, ns: 0, term: 'current', proc: 1 }], lapse: false }],
  },
  {
    defect: 7,
    title: "resign waits for the leader's fenced transaction past the lease's end, answers true and closes the term 'resigned'",
    kinds: ['mariadb'],
    steps: [plain(0), { op: 'hold', holder: { kind: 'assert', c: 0, ns: 0, proc: 0 }, waiters: [{ op: 'resign', c: 0, ns: 0, session: false, proc: 1 }], lapse: false }],
  },
  {
    defect: 8,
    title: 'an ineligible group tick closes the lapsed term it does not take',
    kinds: ['sqlite'],
    steps: [
      plain(0),
      { op: 'time', units: 3 },
      { op: 'tick', c: 1, nss: [0], priority: 0, eligible: false, metadata: false, balance: false, release: [], reason: 'resigned', proc: 0 },
    ],
  },
  {
    defect: 9,
    title: "a balancing tick beside a rival's first insert of one namespace's leader row still takes the other, vacant, namespace",
    kinds: ['postgres'],
    steps: [
      { op: 'register', c: 0, ns: 0, fields: {}, proc: 0 },
      {
        op: 'hold',
        holder: { kind: 'elect', c: 0, ns: 0, proc: 0 },
        waiters: [{ op: 'tick', c: 1, nss: [0, 1], priority: 0, eligible: true, metadata: false, balance: true, release: [], reason: 'resigned', proc: 1 }],
        lapse: false,
      },
    ],
  },
];

function scheduleOf(r: Regression): Schedule {
  const json = JSON.stringify(r.steps);
  const max = (re: RegExp) => Math.max(0, ...[...json.matchAll(re)].map((m) => Number(m[1])));
  // Namespaces: those named by "ns" and those a tick lists in "nss".
  const listed = Math.max(0, ...[...json.matchAll(/"nss":\[([\d,]*)\]/g)].flatMap((m) => m[1]!.split(',').filter(Boolean).map(Number)));
  return { candidates: Math.max(2, max(/"c":(\d+)/g) + 1), namespaces: Math.max(max(/"ns":(\d+)/g), listed) + 1, hostile: r.hostile ?? false, steps: r.steps };
}

function applies(r: Regression, db: TestDatabase): boolean {
  if (!r.kinds.includes(db.kind)) return false;
  if (r.sqlite3File) return db.shared && db.name.includes('(sqlite3)');
  return true;
}

describeEachDatabase('differential regressions', (db) => {
  const worlds = new Map<string, Promise<World>>();
  const worldFor = (settings: SessionSettings = []) => {
    const key = settings.join(';');
    let world = worlds.get(key);
    // Other session settings get a database of their own: a defect there may leave locks behind.
    if (!world) worlds.set(key, (world = (settings.length === 0 ? Promise.resolve(db) : db.sibling()).then((d) => openWorld(d, EXPIRE_SECONDS, settings))));
    return world;
  };

  const mine = REGRESSIONS.filter((r) => applies(r, db));
  if (mine.length === 0) test.skip('no regression schedule concerns this database', () => undefined);
  for (const r of mine) {
    const open = isOpen(r.defect);
    test(`defect ${r.defect} (${open ? 'open: the harness must report it' : 'fixed: must pass'}): ${r.title}`, async () => {
      const world = await worldFor(r.settings);
      // Strict about this regression's own defect, whatever the runs tolerate while it is open.
      const holdWaits: HoldWaits[] = [];
      const failure = await runSchedule(world, scheduleOf(r), 'reg', { tolerateEarlyCloses: r.defect !== 8 && isOpen(8), holdWaits }).then(
        () => undefined,
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      );
      if (open) {
        if (failure === undefined) throw new Error(`defect ${r.defect} (${DEFECTS[r.defect]}) no longer reproduces: close it in known-defects.ts`);
        console.log(`defect ${r.defect} on ${db.name}, as the harness reports it:\n${failure}`);
      } else {
        expect(failure).toBeUndefined();
        expect(holdWaits).toHaveLength(r.steps.filter((s) => s.op === 'hold').length);
      }
      // A hold round replays its defect only if its waiter really waited for the holder's lock:
      // the database showed it waiting while the holder held its transaction open, and it
      // answered only after the holder committed.
      expect(holdWaits).toEqual(holdWaits.map(({ waiters }) => ({ waiters, blocked: waiters.length, answeredAfterCommit: waiters.map(() => true) })));
    }, 120_000);
  }
});
