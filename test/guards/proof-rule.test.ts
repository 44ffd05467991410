/**
 * The proof a fence records is the fence's own verdict, written a second time in SQL: the
 * proof's condition in each database's `proofColumns` (and the trigger's check of it) restates
 * `judgeFence`. This test holds the two copies equal over every input the rule reads — who holds
 * the leader row (the caller, another candidate, nobody, the caller under a lease that ran out)
 * and which term the caller names (none, the held one, an older one, a newer one) — on each
 * database that has guards: in one transaction, `assertLeader` passes exactly when the guarded
 * table then takes the write. Each state is driven directly (the lease's end set by the database
 * clock), not waited for.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, NotLeaderError } from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

type Holder = 'caller' | 'another' | 'nobody' | 'caller, lapsed';
type NamedTerm = 'none' | 'held' | 'older' | 'newer';

const HOLDERS: Holder[] = ['caller', 'another', 'nobody', 'caller, lapsed'];
const TERMS: NamedTerm[] = ['none', 'held', 'older', 'newer'];

describeEachDatabase(
  'a guard accepts exactly the writes of transactions whose fence passed',
  (db) => {
    let ds: DataSource;
    let svc: ElectionService;
    const q = (name: string) => (db.kind === 'mariadb' ? `\`${name}\`` : `"${name}"`);
    /** The lease's end one second ago by the database clock. */
    const lapsed = { postgres: "clock_timestamp() - interval '1 second'", mariadb: 'UTC_TIMESTAMP(6) - INTERVAL 1 SECOND', sqlite: "strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 seconds')" }[db.kind];
    const p = db.kind === 'postgres' ? '$1' : '?';

    beforeAll(async () => {
      ds = await db.connect();
      svc = new ElectionService(ds, { expireSeconds: 60 });
    });

    test.each(HOLDERS.flatMap((holder) => TERMS.map((term) => [holder, term] as const)))('leader row held by %s, the caller names term %s', async (holder, named) => {
      const ns = freshNs();
      const table = `proof_${uuid().slice(0, 8)}`;
      await query(ds, `CREATE TABLE ${q(table)} (note varchar(20) NOT NULL)`);
      await svc.guardTable(table, { ns });
      const [caller, other] = [uuid(), uuid()];
      // Terms 1 and 2 granted and ended, so that an older term exists in every state.
      for (let i = 0; i < 2; i++) {
        await svc.elect(other, { ns });
        await svc.resign(other, { ns });
      }
      if (holder === 'caller' || holder === 'caller, lapsed') await svc.elect(caller, { ns });
      if (holder === 'another') await svc.elect(other, { ns });
      if (holder === 'caller, lapsed') await query(ds, `UPDATE gemstone_election_leader SET lease_expires_at = ${lapsed} WHERE ns = ${p}`, [ns]);
      const [row] = await query<{ term: string }>(ds, `SELECT term FROM gemstone_election_leader WHERE ns = ${p}`, [ns]);
      const held = Number(row!.term);
      const term = named === 'none' ? undefined : named === 'held' ? held : named === 'older' ? held - 1 : held + 1;

      const outcome = await inCallerTransaction(ds, async (session) => {
        const fence = await svc.assertLeader(caller, { ns, session, ...(term === undefined ? {} : { term }) }).then(
          () => 'passed' as const,
          (e: unknown) => {
            if (!(e instanceof NotLeaderError)) throw e;
            return 'failed' as const;
          },
        );
        const write = await session.query(`INSERT INTO ${q(table)} (note) VALUES ('w')`).then(
          () => 'taken' as const,
          () => 'refused' as const,
        );
        if (write === 'refused') throw Object.assign(new Error('refused'), { fence });
        return { fence, write };
      }).catch((e: unknown) => ({ fence: (e as { fence?: string }).fence, write: 'refused' as const }));

      // The fence's verdict, by the rule: the caller holds an unexpired lease (under the term it names).
      const expected = holder === 'caller' && (named === 'none' || named === 'held') ? 'passed' : 'failed';
      expect(outcome.fence).toBe(expected);
      expect(outcome.write).toBe(outcome.fence === 'passed' ? 'taken' : 'refused');
      const [{ n }] = await query<{ n: string }>(ds, `SELECT COUNT(*) AS n FROM ${q(table)}`);
      expect(Number(n)).toBe(expected === 'passed' ? 1 : 0);
    });
  },
  { sharedOnly: true },
);
