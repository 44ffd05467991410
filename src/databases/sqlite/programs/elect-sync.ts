import { slot, sql, SqlFragment } from '../../../db/sql';
import { decide } from '../../../election/decision';
import type { ElectDecision } from '../../../election/rows';
import { toStanding } from '../../../election/statements/standing';
import type { CandidateFields } from '../../../election/validate';
import { sqlBool } from '../../dialect';
import { compile, CompiledStatement } from '../compile';
import type { SyncStep } from '../sync-step';
import { mine, ProgramContext, rivalPriority } from './program-context';

/*
 * elect on better-sqlite3: the protocol of the general path (`election/service.ts`), run
 * synchronously inside BEGIN IMMEDIATE … COMMIT (see `runSyncStep`). The write lock is held from
 * the first statement, so what one statement read is still current when the decision made from
 * it is written: decisions are made here, in JavaScript, as on the other databases. The
 * statements are rendered once (see `compile`); the inputs that change from call to call are slots.
 */

const NS = slot('ns');
const ID = slot('id');
const METADATA = slot('metadata');
const PRIORITY = slot('priority');

/** The compiled statements of one DataSource's elect. */
export interface CompiledElect {
  /** The leader row (none for a new namespace), the database clock and the caller's standing. */
  readonly read: CompiledStatement;
  /** A new namespace's leader row (term 0, vacant). */
  readonly create: CompiledStatement;
  /**
   * The renewal: the caller's lease extended (the term stays) if it is still unexpired by the
   * clock of this statement; returns the row it renewed (none: the lease ran out since it was read).
   */
  extend(expire: number): CompiledStatement;
  /** The candidate upsert, by which options were given (eligibility is rendered as its value). */
  touch(expire: number, fields: CandidateFields): CompiledStatement;
}

export function compileElect(pc: ProgramContext): CompiledElect {
  const { d, leaders } = pc.t;
  const compiled = new Map<string, CompiledStatement>();
  const compiledAs = (key: string, build: () => SqlFragment): CompiledStatement => {
    let statement = compiled.get(key);
    if (!statement) {
      // One entry per lease length and set of options used; bounded for callers that vary them freely.
      if (compiled.size >= 64) compiled.clear();
      compiled.set(key, (statement = compile(build())));
    }
    return statement;
  };
  return {
    read: compile(sql`SELECT l.leader_id AS leader_id, l.term AS term,
  CASE WHEN l.leader_id IS NOT NULL AND l.lease_expires_at > ${d.now} THEN 1 ELSE 0 END AS live, ${d.now} AS db_now,
  ${mine(pc, NS, ID, 'priority')} AS my_priority, ${mine(pc, NS, ID, 'eligible')} AS my_eligible, ${rivalPriority(pc, NS, ID)} AS rival_priority
FROM ${leaders} l WHERE l.ns = ${NS}`),
    create: compile(sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term) VALUES (${NS}, NULL, NULL, ${d.now}, 0)
${d.insertIfAbsent(['ns'])}`),
    extend: (expire) =>
      compiledAs(
        `extend:${expire}`,
        () => sql`UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expire)}, updated_at = ${d.now}
WHERE ns = ${NS} AND leader_id = ${ID} AND lease_expires_at > ${d.now} RETURNING term`,
      ),
    touch: (expire, fields) =>
      compiledAs(
        `touch:${expire}:${fields.metadataJson !== undefined}:${fields.priority !== undefined}:${String(fields.eligible)}`,
        () =>
          pc.store.candidateUpsert(NS, ID, expire, {
            ...(fields.metadataJson !== undefined ? { metadataJson: METADATA } : {}),
            ...(fields.priority !== undefined ? { priority: PRIORITY } : {}),
            ...(fields.eligible !== undefined ? { eligible: fields.eligible } : {}),
          }),
      ),
  };
}

/**
 * One elect, inside the step:
 * - One SELECT reads the leader row, the database clock and the caller's standing; `decide`
 *   applies the rule. A follower's call writes nothing else but its candidate row.
 * - A renewal is one UPDATE of the lease's end: the term stays, no history is written. It is
 *   decided again by the clock of that UPDATE: a lease that ran out since the read is taken
 *   over like any lapsed lease, never extended under its old term.
 * - A takeover (of a vacant lease, or an expired one — the caller's own included) closes the
 *   lapsed term ('expired', at its lease's end), raises the term and opens the new term's
 *   history row; a new namespace gets its leader row first (term 0, vacant).
 * - Then the caller's candidate upsert (heartbeat and options).
 */
export function electSync(pc: ProgramContext, compiled: CompiledElect, step: SyncStep, ns: string, id: string, expire: number, fields: CandidateFields): ElectDecision {
  const { d, leaders } = pc.t;
  const input = { ns, id, metadata: fields.metadataJson, priority: fields.priority };
  let [seen] = step.runCompiled(compiled.read, input);
  if (!seen) {
    step.runCompiled(compiled.create, input);
    [seen] = step.runCompiled(compiled.read, input);
    if (!seen) throw new Error(`gemstone-utils: leader row of ${JSON.stringify(ns)} vanished inside its transaction`);
  }
  const standing = toStanding(seen);
  const leaderId = (seen.leader_id as string | null) ?? null;
  let live = leaderId !== null && sqlBool(seen.live);
  const term = Number(seen.term);
  const databaseNow = d.parseInstant(seen.db_now) as Date;
  let { renewing, takes, handOver } = decide({ leaderId, live }, id, standing, fields);
  if (renewing && step.runCompiled(compiled.extend(expire), input).length === 0) {
    live = false;
    ({ renewing, takes, handOver } = decide({ leaderId, live }, id, standing, fields));
  }
  let decision: ElectDecision;
  if (!takes) {
    decision = { leaderId: live ? leaderId : null, term, isLeader: false, acquired: false, handOver: false, wasRegistered: standing.registered, databaseNow };
  } else if (renewing) {
    decision = { leaderId: id, term, isLeader: true, acquired: false, handOver, wasRegistered: standing.registered, databaseNow };
  } else {
    // The lapsed term ends at its lease's end, read before the row changes.
    if (leaderId !== null) step.run('elect:close', pc.history.closeTerm(ns, 'expired', true));
    step.run(
      'elect:grant',
      sql`UPDATE ${leaders} SET leader_id = ${id}, term = ${term + 1}, lease_expires_at = ${d.nowPlus(expire)}, updated_at = ${d.now} WHERE ns = ${ns}`,
    );
    step.run('elect:open', pc.history.openTerm(ns));
    decision = { leaderId: id, term: term + 1, isLeader: true, acquired: true, handOver, wasRegistered: standing.registered, databaseNow };
  }
  step.runCompiled(compiled.touch(expire, fields), input);
  return decision;
}
