import type { EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import { execute } from '../../db/session';
import { raw, sql, SqlFragment } from '../../db/sql';
import { boundedName, LEADER_TABLE } from '../../election/tables';
import { ValidationError } from '../../errors';
import { LeaderTableMissing, type GuardedTable, type GuardParts, type GuardTarget } from '../contract/guards';
import { driverError } from '../dialect';

/**
 * The transaction-local setting that carries a transaction's proofs: a JSON object from each
 * proved namespace to `[term, candidateId]`. Set with `is_local`, it ends with its transaction
 * (commit or rollback, and so never reaches the next transaction on a pooled connection).
 */
const PROOF_SETTING = 'gemstone.proof';

/** The SQLSTATE of a refused write (a code of the library's own: class GS is no standard one). */
const REFUSED = 'GS001';

/**
 * The proof, appended to the fence's read of the locked leader row (`election/fence.ts`): the
 * setting gains `ns → [term, candidateId]` when the row names the caller under an unexpired lease
 * by the clock of after the lock (and under `term` when given) — the fence's own rule, so the
 * proof exists exactly when `assertLeader` passes (test/guards: a call that throws leaves none).
 * The columns of a locking CTE's outer query are computed after the lock (see `lockLeader`).
 */
function proofColumns(alias: string, candidateId: string, term: number | undefined): SqlFragment {
  const a = raw(alias);
  const termMatches = term === undefined ? raw('') : sql` AND ${a}.term = ${term}`;
  return sql`, CASE WHEN ${a}.leader_id = ${candidateId} AND ${a}.lease_expires_at > clock_timestamp()${termMatches}
  THEN set_config('${raw(PROOF_SETTING)}', (COALESCE(NULLIF(current_setting('${raw(PROOF_SETTING)}', true), '')::jsonb, '{}'::jsonb)
    || jsonb_build_object(${a}.ns, jsonb_build_array(${a}.term, ${a}.leader_id)))::text, true) END AS proved`;
}

/**
 * The trigger function of this installation (named after its leader table, so that two
 * `entityPrefix`es in one database each have their own) and the schema it lives in: the leader
 * table's, resolved by the server.
 */
async function functionOf(context: DbContext, m: EntityManager): Promise<{ schema: string; name: string; leaders: string }> {
  const leaders = context.tableName(LEADER_TABLE);
  const schema = context.schemaName(LEADER_TABLE);
  const [row] = await execute<{ schema: string | null }>(
    context,
    m,
    sql`SELECT n.nspname AS schema FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = to_regclass(CASE WHEN ${schema ?? null}::text IS NULL THEN quote_ident(${leaders}) ELSE quote_ident(${schema ?? null}) || '.' || quote_ident(${leaders}) END)`,
  );
  if (!row?.schema) throw new LeaderTableMissing(leaders);
  return { schema: row.schema, name: boundedName(leaders, '_guard'), leaders };
}

/**
 * The guard's trigger function: it refuses the statement unless the transaction's proof for the
 * namespace (the trigger's argument) names the leader row's holder and term and the lease is
 * unexpired by the database clock now. It locks the row `FOR SHARE` as the fence does (held
 * already by the proving transaction): a takeover waits for this transaction. The error names
 * the table and the namespace; its DETAIL is JSON the library maps to `NotLeaderError`.
 * The DDL is composed by the server (`format` with `%I`/`%L` from bound parameters).
 */
async function installFunction(context: DbContext, m: EntityManager): Promise<{ schema: string; name: string }> {
  const fn = await functionOf(context, m);
  const [row] = await execute<{ ddl: string }>(
    context,
    m,
    sql`SELECT format($ddl$CREATE OR REPLACE FUNCTION %1$I.%2$I() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
  target text := TG_ARGV[0];
  proof jsonb := NULLIF(current_setting('${raw(PROOF_SETTING)}', true), '')::jsonb -> TG_ARGV[0];
  holder text;
  held integer;
BEGIN
  SELECT l.leader_id, l.term INTO holder, held FROM %1$I.%3$I l
  WHERE l.ns = target AND l.leader_id IS NOT NULL AND l.lease_expires_at > clock_timestamp() FOR SHARE;
  IF proof IS NULL OR holder IS NULL OR holder <> (proof ->> 1) OR held <> (proof ->> 0)::integer THEN
    RAISE EXCEPTION 'gemstone-utils: %% on guarded table %%.%% refused: this transaction has not proved the live leadership of namespace %%', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME, to_json(target)::text
      USING ERRCODE = '${raw(REFUSED)}',
        DETAIL = json_build_object('ns', target, 'table', TG_TABLE_NAME, 'leaderId', holder, 'term', held, 'provedBy', proof ->> 1)::text,
        HINT = 'Write inside a transaction that called assertLeader (or inside ScheduledRun.transaction) while leading that namespace.';
  END IF;
  RETURN NULL;
END
$body$$ddl$, ${fn.schema}::text, ${fn.name}::text, ${fn.leaders}::text) AS ddl`,
  );
  await execute(context, m, sql`${raw(row!.ddl)}`);
  return fn;
}

/** The table as the server resolves the caller's name (quoted as given: case and all), or undefined. */
async function resolve(context: DbContext, m: EntityManager, target: GuardTarget): Promise<string | undefined> {
  const [row] = await execute<{ oid: string | null }>(
    context,
    m,
    sql`SELECT to_regclass(CASE WHEN ${target.schema ?? null}::text IS NULL THEN quote_ident(${target.table}) ELSE quote_ident(${target.schema ?? null}) || '.' || quote_ident(${target.table}) END)::oid::text AS oid`,
  );
  return row?.oid ?? undefined;
}

/** The table as the caller named it, for messages. */
function named(target: GuardTarget): string {
  return target.schema === undefined ? JSON.stringify(target.table) : `${JSON.stringify(target.schema)}.${JSON.stringify(target.table)}`;
}

export const postgresGuards: GuardParts = {
  proofColumns,

  async guard(context, m, target, ns) {
    const oid = await resolve(context, m, target);
    if (oid === undefined) throw new ValidationError('table', `names no table the connection can see (${named(target)}): create it first`);
    const fn = await installFunction(context, m);
    // Replaced, not added twice: guarding again (for another namespace, say) is idempotent.
    const [row] = await execute<{ drop: string; create: string }>(
      context,
      m,
      sql`SELECT format('DROP TRIGGER IF EXISTS %I ON %s', ${fn.name}::text, ${oid}::oid::regclass) AS drop,
  format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %I.%I(%L)',
    ${fn.name}::text, ${oid}::oid::regclass, ${fn.schema}::text, ${fn.name}::text, ${ns}::text) AS create`,
    );
    await execute(context, m, sql`${raw(row!.drop)}`);
    await execute(context, m, sql`${raw(row!.create)}`);
  },

  async unguard(context, m, target) {
    const oid = await resolve(context, m, target);
    if (oid === undefined) return false;
    const fn = await functionOf(context, m);
    const [row] = await execute<{ drop: string | null }>(
      context,
      m,
      sql`SELECT format('DROP TRIGGER %I ON %s', t.tgname, t.tgrelid::regclass) AS drop FROM pg_trigger t
WHERE t.tgrelid = ${oid}::oid AND t.tgname = ${fn.name}::text`,
    );
    if (!row?.drop) return false;
    await execute(context, m, sql`${raw(row.drop)}`);
    return true;
  },

  async list(context, m) {
    const fn = await functionOf(context, m);
    const rows = await execute<{ table: string; schema: string; ns: string }>(
      context,
      m,
      sql`SELECT c.relname AS "table", n.nspname AS "schema", convert_from(substring(t.tgargs FROM 1 FOR length(t.tgargs) - 1), 'UTF8') AS ns
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_namespace pn ON pn.oid = p.pronamespace
WHERE p.proname = ${fn.name}::text AND pn.nspname = ${fn.schema}::text AND t.tgname = ${fn.name}::text
ORDER BY n.nspname, c.relname`,
    );
    return rows.map((r): GuardedTable => ({ table: r.table, schema: r.schema, ns: r.ns }));
  },

  refusal(error) {
    const e = driverError(error);
    if (e['code'] !== REFUSED || typeof e['detail'] !== 'string') return undefined;
    try {
      const d = JSON.parse(e['detail']) as { ns: string; table: string; leaderId: string | null; term: number | null; provedBy: string | null };
      return { ns: d.ns, table: d.table, leaderId: d.leaderId ?? null, term: d.term ?? null, provedBy: d.provedBy ?? null };
    } catch {
      return undefined;
    }
  },
};
