import type { EntityManager } from 'typeorm';
import { execute } from '../../../db/session';
import { sql } from '../../../db/sql';
import { compareNs } from '../../../election/group-tick';
import type { GroupContext } from './group-context';
import { lockTimeout } from './lock-timeout';

/*
 * Creates the leader rows of namespaces the group has not seen yet (vacant, term 0), in namespace
 * order, before the tick's statement, in its transaction. Inside the one statement a missing
 * row's insert met another transaction's insert of the same row only after the decision, which
 * had already counted that namespace against the balance quota: the tick then took nothing in its
 * place (the differential tests found it). Here an insert that meets another transaction's waits
 * for it (bounded like the tick's other lock waits), and the statement then decides on the
 * committed row. Rows that exist are left out: their unique check would wait for a transaction
 * updating them.
 */

export async function createRows(gc: GroupContext, m: EntityManager, fresh: readonly string[], wait: number | undefined): Promise<void> {
  const { context, t: { leaders } } = gc;
  const sorted = [...fresh].sort(compareNs);
  await execute(
    context,
    m,
    sql`WITH params AS (
  SELECT ${
    wait === undefined ? sql`NULL` : lockTimeout(wait)
  } AS lock_timeout
)
INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term)
SELECT x.ns, NULL, NULL, clock_timestamp(), 0 FROM unnest(CAST(${sorted} AS varchar[])) WITH ORDINALITY AS x (ns, i) CROSS JOIN params
-- Only rows missing from the snapshot: an insert that conflicts with an existing row another
-- transaction is updating would wait for that transaction.
WHERE NOT EXISTS (SELECT 1 FROM ${leaders} l WHERE l.ns = x.ns)
ORDER BY x.i
ON CONFLICT (ns) DO NOTHING`,
  );
}
