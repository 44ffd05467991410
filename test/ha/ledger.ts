/**
 * The history the PostgreSQL failover tests judge: `ha_ledger`, one table written in the same
 * transactions as what it records, so it survives (or is lost) with them and its ids follow the
 * lock order of the leader row.
 *
 * - A trigger on the leader table adds a row for every grant and vacancy (and, with `renewals`,
 *   every renewal), with the database's clock at that moment.
 * - Fenced writes are rows of kind 'write': inserted there directly, or mirrored by a trigger from
 *   the `elector_ledger` table that the elector worker processes write.
 *
 * Why id order is commit order where it matters: a fenced write checks the leader row
 * (`assertLeader`, row-locked) before its insert, and every grant, renewal and vacancy updates that
 * row; so a write and a lease change never overlap, and the later one takes the later id.
 */

export interface LedgerRow {
  id: number;
  kind: 'grant' | 'vacate' | 'renew' | 'write';
  term: number;
  holder: string | null;
  seq: number;
  /** Database clock (ms since the epoch) when the row was written. */
  at: number;
}

export const LEDGER_TABLE = `CREATE TABLE ha_ledger (
  id bigserial PRIMARY KEY, kind varchar(8) NOT NULL, ns varchar(255) NOT NULL, term bigint NOT NULL,
  holder varchar(36), worker int, seq bigint, at timestamptz NOT NULL DEFAULT clock_timestamp())`;

/** The table and the leader-table trigger: grants and vacancies, with `renewals` every renewal too. */
export function ledgerSetup(options: { renewals: boolean }): string[] {
  return [
    LEDGER_TABLE,
    `CREATE FUNCTION ha_lease_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ha_ledger (kind, ns, term, holder) VALUES (
    CASE WHEN NEW.leader_id IS NULL THEN 'vacate'
      WHEN OLD.term IS DISTINCT FROM NEW.term OR OLD.leader_id IS DISTINCT FROM NEW.leader_id THEN 'grant'
      ELSE 'renew' END,
    NEW.ns, NEW.term, NEW.leader_id);
  RETURN NULL;
END $$`,
    `CREATE TRIGGER ha_lease_change AFTER UPDATE ON gemstone_election_leader FOR EACH ROW
${options.renewals ? '' : 'WHEN (OLD.term IS DISTINCT FROM NEW.term OR OLD.leader_id IS DISTINCT FROM NEW.leader_id) '}EXECUTE FUNCTION ha_lease_change()`,
  ];
}

/**
 * `elector_ledger`, the table test/support/workers/elector-worker.js writes its fenced rows to,
 * with every insert mirrored into ha_ledger as a write of namespace `ns`.
 */
export function workerLedgerSetup(ns: string): string[] {
  // The namespace is the trigger's argument, a literal of the DDL: it comes from the test itself.
  if (!/^[\w-]+$/.test(ns)) throw new Error(`unexpected namespace ${ns}`);
  return [
    'CREATE TABLE elector_ledger (id bigserial PRIMARY KEY, term bigint NOT NULL, candidate_id varchar(36) NOT NULL, seq bigint NOT NULL)',
    `CREATE FUNCTION ha_mirror_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ha_ledger (kind, ns, term, holder, seq) VALUES ('write', TG_ARGV[0], NEW.term, NEW.candidate_id, NEW.seq);
  RETURN NULL;
END $$`,
    `CREATE TRIGGER ha_mirror_write AFTER INSERT ON elector_ledger FOR EACH ROW EXECUTE FUNCTION ha_mirror_write('${ns}')`,
  ];
}

/** The ledger of namespace `ns`, in id order (parameters: $1 = ns). */
export const LEDGER_SELECT = `SELECT id, kind, term, holder, coalesce(seq, 0) AS seq, extract(epoch FROM at) * 1000 AS at
FROM ha_ledger WHERE ns = $1 ORDER BY id`;

export function toLedger(rows: Array<Record<string, unknown>>): LedgerRow[] {
  return rows.map((r) => ({
    id: Number(r.id),
    kind: r.kind as LedgerRow['kind'],
    term: Number(r.term),
    holder: (r.holder as string | null) || null,
    seq: Number(r.seq),
    at: Number(r.at),
  }));
}

/**
 * Writes that committed when their writer did not hold their term: replaying the history, a
 * write whose term and holder are not those of the current, unvacated lease.
 */
export function staleWrites(ledger: LedgerRow[]): LedgerRow[] {
  let current: { term: number; holder: string | null } = { term: -1, holder: null };
  const stale: LedgerRow[] = [];
  for (const row of ledger) {
    if (row.kind === 'grant') current = { term: row.term, holder: row.holder };
    else if (row.kind === 'vacate') current = { term: row.term, holder: null };
    else if (row.kind === 'write' && (row.term !== current.term || row.holder !== current.holder)) stale.push(row);
  }
  return stale;
}

/** Grants that are not the previous grant's term + 1 (nor a repeat of it). */
export function grantOrderBroken(ledger: LedgerRow[]): LedgerRow[] {
  const grants = ledger.filter((r) => r.kind === 'grant');
  return grants.filter((g, i) => i > 0 && g.term !== grants[i - 1]!.term + 1 && g.term !== grants[i - 1]!.term);
}

/** Acknowledged fenced writes absent from the ledger (identified by writer and sequence number). */
export function missingWrites<T extends { candidateId: string; seq: number }>(ledger: LedgerRow[], acked: T[]): T[] {
  const committed = new Set(ledger.filter((r) => r.kind === 'write').map((r) => `${r.holder}/${r.seq}`));
  return acked.filter((a) => !committed.has(`${a.candidateId}/${a.seq}`));
}

/** Terms that more than one candidate was told it acquired. */
export function termsHeldByTwoCandidates(elected: Array<{ candidateId: string; term: number }>): number[] {
  const holders = new Map<number, Set<string>>();
  for (const e of elected) {
    if (!holders.has(e.term)) holders.set(e.term, new Set());
    holders.get(e.term)!.add(e.candidateId);
  }
  return [...holders].filter(([, ids]) => ids.size > 1).map(([term]) => term);
}
