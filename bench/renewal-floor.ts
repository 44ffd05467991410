/**
 * `npm run bench:renewal-floor`: what a PostgreSQL renewal can cost at least, by the contract's
 * rules, beside the classic PL/pgSQL lease function — to tell a target the library misses from
 * one no implementation can meet.
 *
 * The function (`lib/baseline.ts`, `try_become_leader`) renews a lease by updating ONE row. The
 * contract's `elect` does more durable work on every call: it renews the lease under the leader
 * row's lock AND touches the caller's candidate row like a heartbeat (`last_heartbeat_at`,
 * `expires_at`), and it renews only while no live eligible rival outranks the caller. Measured
 * here, on one raw `pg` Client, each as ONE named prepared statement (planned once), 2,000 calls
 * a round taken in turns of 100, 5 rounds, the median per call:
 * - `function`: `SELECT try_become_leader(…)`;
 * - `lease + heartbeat`: the least SQL of a renewal by the contract — the lease row and the
 *   candidate row written in one statement, nothing judged (not even the rivals);
 * - `lease + heartbeat + rivals`: the same, renewing only while no live eligible rival outranks
 *   the caller (what a renewal must check);
 * - `library`: `ElectionService.electOutcome` of the leader, as an application calls it.
 * The ratios are each one's throughput ÷ the function's.
 */
import { Client } from 'pg';
import { ElectionService } from 'gemstone-utils';
import { installStoredFunction } from './lib/baseline';
import { BenchDatabase } from './lib/databases';
import { candidateIds, openLibrary, service } from './lib/library';

const ROUNDS = 5;
const CALLS = 2_000;
const EXPIRE = 60;

const LEASE = `UPDATE gemstone_election_leader AS l
  SET lease_expires_at = clock_timestamp() + make_interval(secs => $4), updated_at = clock_timestamp()
  WHERE l.ns = CAST($1 AS varchar) AND l.leader_id = CAST($2 AS varchar) AND l.term = $3 AND l.lease_expires_at > clock_timestamp()`;
const RIVALS = `AND NOT EXISTS (SELECT 1 FROM gemstone_election_candidate r JOIN gemstone_election_candidate me
    ON me.ns = r.ns AND me.candidate_id = CAST($2 AS varchar)
    WHERE r.ns = l.ns AND r.candidate_id <> me.candidate_id AND r.eligible AND r.expires_at > clock_timestamp() AND r.priority > me.priority)`;
const renewal = (judged: boolean) => `WITH lease AS (
  ${LEASE}
  ${judged ? RIVALS : ''}
  RETURNING l.term
), touch AS (
  INSERT INTO gemstone_election_candidate (ns, candidate_id, last_heartbeat_at, expires_at)
  SELECT CAST($1 AS varchar), CAST($2 AS varchar), clock_timestamp(), clock_timestamp() + make_interval(secs => $4) FROM lease
  ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = EXCLUDED.last_heartbeat_at, expires_at = EXCLUDED.expires_at
  RETURNING 1
)
SELECT lease.term, (SELECT count(*) FROM touch) AS touched FROM lease`;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

async function main(): Promise<void> {
  const db = new BenchDatabase('postgres', 'floor');
  await db.create();
  const dataSource = await openLibrary(db);
  const client = new Client({ connectionString: db.url });
  try {
    await installStoredFunction(db.url);
    await client.connect();
    const election: ElectionService = service(dataSource, EXPIRE);
    const [leader] = candidateIds(1) as [string];
    const ns = 'floor';
    const granted = await election.electOutcome(leader, { ns });
    const values = [ns, leader, granted.term, EXPIRE];
    /** A raw renewal that must renew (one row back), or the comparison would be of nothing. */
    const raw = (name: string, text: string) => async () => {
      const { rows } = await client.query({ name, text, values });
      if (rows.length !== 1 || Number(rows[0].touched) !== 1) throw new Error(`${name}: did not renew (${JSON.stringify(rows)})`);
    };
    const cases: Record<string, () => Promise<unknown>> = {
      function: async () => {
        const { rows } = await client.query({ name: 'fn', text: 'SELECT try_become_leader($1, $2, $3) AS ok', values: ['floor', leader, EXPIRE] });
        if (rows[0]?.ok !== true) throw new Error('function: did not renew');
      },
      'lease + heartbeat': raw('bare', renewal(false)),
      'lease + heartbeat + rivals': raw('judged', renewal(true)),
      library: async () => {
        const outcome = await election.electOutcome(leader, { ns });
        if (!outcome.isLeader || outcome.acquired) throw new Error(`library: not a renewal (${JSON.stringify(outcome)})`);
      },
    };
    const walls: Record<string, number[]> = {};
    for (const [name, call] of Object.entries(cases)) {
      walls[name] = [];
      for (let i = 0; i < 300; i++) await call(); // warm-up
    }
    // The cases take turns in chunks of calls (as the hot-path suite's implementations do), so a
    // burst of load from elsewhere on the machine hits them alike.
    const chunk = 100;
    for (let round = 0; round < ROUNDS; round++) {
      const spent: Record<string, bigint> = {};
      for (let done = 0; done < CALLS; done += chunk) {
        for (const [name, call] of Object.entries(cases)) {
          const started = process.hrtime.bigint();
          for (let i = 0; i < chunk; i++) await call();
          spent[name] = (spent[name] ?? 0n) + process.hrtime.bigint() - started;
        }
      }
      for (const name of Object.keys(cases)) walls[name]!.push(Number(spent[name]) / 1_000 / CALLS);
    }
    const fn = median(walls.function!);
    const lines = [
      `PostgreSQL renewal, wall µs per call (median of ${ROUNDS} rounds of ${CALLS} calls, one caller) and throughput ÷ the PL/pgSQL function's`,
      '',
      '| renewal | µs per call | ÷ function |',
      '|---|---|---|',
      ...Object.keys(cases).map((name) => {
        const us = median(walls[name]!);
        return `| ${name} | ${us.toFixed(0)} | ${(fn / us).toFixed(2)}× |`;
      }),
    ];
    console.log(lines.join('\n'));
  } finally {
    await client.end().catch(() => undefined);
    await dataSource.destroy();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
