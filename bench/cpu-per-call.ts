/**
 * `npm run bench:cpu -- [--db postgres,mariadb,sqlite]`: the CPU time one follower's `elect`
 * and one leader's renewal cost, the library's beside the baseline's (`lib/baseline.ts`), split
 * into this process (the client: driver, TypeORM, the library) and the database server.
 *
 * Why: at 64 concurrent candidates on two cores every call waits for CPU, so a follower's p99
 * there follows what a call costs in CPU rather than its latency alone. The contention suite's
 * ratio is explained (or not) by this one.
 *
 * - Client: `process.cpuUsage()` around a block of calls.
 * - Server: the CPU of every process of the server (PostgreSQL: all `postgres` processes, its
 *   background writers included; MariaDB: `mariadbd`), from `/proc/<pid>/stat`, around the same
 *   block. So nothing else may run on the server meanwhile (other databases of it included).
 *   SQLite runs in this process: all its CPU is the client's.
 * - Library and baseline take turns in blocks of 2,000 calls, 5 rounds; the median per call.
 *
 * Linux only (`/proc`).
 */
import * as fs from 'fs';
import { ElectionService } from 'gemstone-utils';
import { openRaw, RawClient } from './lib/baseline';
import { ALL_KINDS, BenchDatabase, BenchKind } from './lib/databases';
import { candidateIds, openLibrary, service } from './lib/library';

const ROUNDS = 5;
const CALLS = 2_000;
const EXPIRE = 60;
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** Total user + system CPU (µs) of the server's processes. */
function serverMicros(kind: BenchKind): number {
  if (kind === 'sqlite') return 0;
  const names = kind === 'postgres' ? ['postgres'] : ['mariadbd', 'mysqld'];
  let ticks = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    if (!names.includes(name)) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
  }
  return (ticks / TICKS_PER_SECOND) * 1e6;
}

function clientMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

interface Side {
  client: number[];
  server: number[];
  wall: number[];
}

async function measure(kind: BenchKind, call: () => Promise<unknown>, side: Side): Promise<void> {
  const [c0, s0, w0] = [clientMicros(), serverMicros(kind), process.hrtime.bigint()];
  for (let i = 0; i < CALLS; i++) await call();
  const [c1, s1, w1] = [clientMicros(), serverMicros(kind), process.hrtime.bigint()];
  side.client.push((c1 - c0) / CALLS);
  side.server.push((s1 - s0) / CALLS);
  side.wall.push(Number(w1 - w0) / 1_000 / CALLS);
}

const empty = (): Side => ({ client: [], server: [], wall: [] });

async function runKind(kind: BenchKind): Promise<string[]> {
  const db = new BenchDatabase(kind, 'cpu');
  await db.create();
  const dataSource = await openLibrary(db.target);
  let raw: RawClient | undefined;
  try {
    raw = await openRaw(db.target);
    const baseline = raw;
    const election: ElectionService = service(dataSource, EXPIRE);
    const [leader, follower] = candidateIds(2) as [string, string];
    const ns = { library: 'cpu-library', baseline: 'cpu-baseline' };
    await election.elect(leader, { ns: ns.library });
    await baseline.elect(ns.baseline, leader, EXPIRE);
    const cases = {
      follower: {
        library: () => election.electOutcome(follower, { ns: ns.library }),
        baseline: () => baseline.elect(ns.baseline, follower, EXPIRE),
      },
      renewal: {
        library: () => election.electOutcome(leader, { ns: ns.library }),
        baseline: () => baseline.elect(ns.baseline, leader, EXPIRE),
      },
    };
    const lines: string[] = [];
    for (const [name, sides] of Object.entries(cases)) {
      const results = { library: empty(), baseline: empty() };
      for (const call of Object.values(sides)) for (let i = 0; i < 300; i++) await call(); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        await measure(kind, sides.library, results.library);
        await measure(kind, sides.baseline, results.baseline);
      }
      const m = (side: Side) => ({ client: median(side.client), server: median(side.server), wall: median(side.wall) });
      const [lib, base] = [m(results.library), m(results.baseline)];
      const total = (x: { client: number; server: number }) => x.client + x.server;
      const f = (v: number) => v.toFixed(0).padStart(5);
      lines.push(
        `| ${kind} | ${name} | ${f(lib.client)} / ${f(lib.server)} / ${f(total(lib))} | ${f(base.client)} / ${f(base.server)} / ${f(total(base))} | ${(total(lib) / total(base)).toFixed(2)} | ${f(lib.wall)} / ${f(base.wall)} |`,
      );
      // The outcome is what the case says it is.
      const outcome = await election.electOutcome(name === 'follower' ? follower : leader, { ns: ns.library });
      if (outcome.isLeader !== (name === 'renewal')) throw new Error(`${kind} ${name}: unexpected outcome ${JSON.stringify(outcome)}`);
    }
    return lines;
  } finally {
    await raw?.close();
    await dataSource.destroy();
    await db.drop();
  }
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--db');
  const kinds = (at > 0 ? (process.argv[at + 1] ?? '').split(',') : [...ALL_KINDS]) as BenchKind[];
  for (const kind of kinds) if (!ALL_KINDS.includes(kind)) throw new Error(`--db: unknown database ${JSON.stringify(kind)}`);
  const lines = [
    `CPU µs per call (client / server / both), median of ${ROUNDS} rounds of ${CALLS} calls; wall µs per call`,
    '',
    '| database | call | library | baseline | CPU library ÷ baseline | wall library / baseline |',
    '|---|---|---|---|---|---|',
  ];
  for (const kind of kinds) lines.push(...(await runKind(kind)));
  console.log(lines.join('\n'));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
