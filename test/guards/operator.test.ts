/**
 * An operator's write to a guarded table (`ElectionService.runAsOperator`): the loop that leads
 * hands over to the operator's candidate (the highest priority) at its next tick, the operator's
 * one transaction proves the lease and writes, its term ends in the history with the end reason
 * `operator`, and the loop leads again. A leader that never hands over makes it give up after
 * `waitMs`, having written nothing; a failed work writes nothing and still ends the term as the
 * operator's; bad options change nothing. PostgreSQL, MariaDB and an SQLite file.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, LeaderElector, LeaderElectorGroup, NotLeaderError, ValidationError } from 'gemstone-utils';
import { waitFor } from '../elector/helpers';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

const MAX_PRIORITY = 2_147_483_647;

describeEachDatabase(
  'runAsOperator',
  (db) => {
    let ds: DataSource;
    let svc: ElectionService;
    const quote = (name: string) => (db.kind === 'mariadb' ? `\`${name}\`` : `"${name}"`);

    beforeAll(async () => {
      ds = await db.connect();
      svc = new ElectionService(ds);
    });

    /** A guarded table of the test's for `ns`, its quoted name. */
    async function guarded(ns: string): Promise<string> {
      const name = `ledger_${uuid().slice(0, 8)}`;
      await query(ds, `CREATE TABLE ${quote(name)} (note varchar(200) NOT NULL)`);
      await svc.guardTable(name, { ns });
      return quote(name);
    }
    const notes = async (t: string) => (await query<{ note: string }>(ds, `SELECT note FROM ${t} ORDER BY note`)).map((r) => r.note);
    const history = (ns: string) => svc.getHistory({ ns, limit: 100 });

    test.each(['elector', 'group'] as const)('a leading %s hands over to the operator, whose proved write commits, whose term the history ends as the operator\'s, and it leads again', async (kind) => {
      const ns = freshNs();
      const t = await guarded(ns);
      const events: string[] = [];
      const common = { dataSource: ds, expireSeconds: 5, intervalMs: 200, onStartedLeading: () => void events.push('started'), onStoppedLeading: () => void events.push('stopped') };
      const loop = kind === 'elector' ? new LeaderElector({ ns, ...common }) : new LeaderElectorGroup({ namespaces: [ns], ...common });
      const leads = () => (loop instanceof LeaderElector ? loop.isLeader : loop.isLeader(ns));
      const term = () => (loop instanceof LeaderElector ? loop.term : loop.leases.get(ns)?.term);
      const reasons: string[] = [];
      loop.on('demoted', (_lease, reason: string) => reasons.push(reason));
      await loop.start();
      try {
        await waitFor('the loop to lead', leads);
        const before = (await history(ns))[0]!;

        const lease = await svc.runAsOperator({ operator: 'alice', reason: 'backfill ticket 42', ns }, async (m, l) => {
          // The loop's leadership ended before the operator's work began: its lease was handed over.
          expect(leads()).toBe(false);
          const [leader] = await m.query(db.kind === 'postgres' ? 'SELECT leader_id FROM gemstone_election_leader WHERE ns = $1' : 'SELECT leader_id FROM gemstone_election_leader WHERE ns = ?', [ns]);
          expect(leader.leader_id).toBe(l.candidateId);
          await m.query(`INSERT INTO ${t} (note) VALUES ('by the operator')`);
          return l;
        });

        expect(await notes(t)).toEqual(['by the operator']);
        expect(lease).toMatchObject({ ns, term: before.term + 1 });
        expect(reasons).toEqual(['handed-over']);
        const rows = await history(ns);
        const operatorTerm = rows.find((h) => h.term === lease.term)!;
        expect(operatorTerm).toMatchObject({ leaderId: lease.candidateId, endReason: 'operator' });
        expect(operatorTerm.endedAt).not.toBeNull();
        expect(rows.find((h) => h.term === before.term)).toMatchObject({ leaderId: loop.candidateId, endReason: 'handed-over' });
        // The operator's candidate row is gone, and the loop takes the lease back.
        expect((await svc.getCandidates({ ns })).map((c) => c.candidateId)).not.toContain(lease.candidateId);
        await waitFor('the loop to lead again', leads);
        expect(term()).toBe(lease.term + 1);
        expect(events).toEqual(['started', 'stopped', 'started']);
      } finally {
        await loop.stop();
      }
    });

    test('a leader that does not hand over: the operator gives up after waitMs with NotLeaderError naming it, never runs the work, and leaves no candidate row', async () => {
      const ns = freshNs();
      const t = await guarded(ns);
      const top = uuid();
      expect(await svc.elect(top, { ns, priority: MAX_PRIORITY })).toBe(top);
      let ran = false;
      const error = await svc
        .runAsOperator({ operator: 'bob', reason: 'repair', ns, waitMs: 300 }, async (m) => {
          ran = true;
          await m.query(`INSERT INTO ${t} (note) VALUES ('x')`);
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotLeaderError);
      expect(error).toMatchObject({ ns, leaderId: top, term: 1 });
      expect((error as Error).message).toContain('"bob" did not get the lease within 300 ms');
      expect(ran).toBe(false);
      expect(await notes(t)).toEqual([]);
      expect((await svc.getCandidates({ ns })).map((c) => c.candidateId)).toEqual([top]);
      expect((await history(ns)).map((h) => h.leaderId)).toEqual([top]);
    });

    test('an abort while it waits: rejects with the signal\'s reason, and leaves no candidate row', async () => {
      const ns = freshNs();
      const top = uuid();
      await svc.elect(top, { ns, priority: MAX_PRIORITY });
      const controller = new AbortController();
      const waiting = svc.runAsOperator({ operator: 'carol', reason: 'repair', ns, signal: controller.signal }, async () => 'ran');
      // The abort comes once the operator's candidate is registered (it waits then).
      await waitFor('the operator to wait', async () => (await svc.getCandidates({ ns })).length === 2);
      controller.abort(new Error('operator cancelled'));
      await expect(waiting).rejects.toThrow('operator cancelled');
      expect((await svc.getCandidates({ ns })).map((c) => c.candidateId)).toEqual([top]);
    });

    test('work that throws: the error comes back, nothing is written, and the term still ends as the operator\'s', async () => {
      const ns = freshNs();
      const t = await guarded(ns);
      let term = 0;
      const error = await svc
        .runAsOperator({ operator: 'dave', reason: 'repair', ns }, async (m, lease) => {
          term = lease.term;
          await m.query(`INSERT INTO ${t} (note) VALUES ('half')`);
          throw new Error('the repair found a bad row');
        })
        .catch((e: unknown) => e);
      expect((error as Error).message).toBe('the repair found a bad row');
      expect(await notes(t)).toEqual([]);
      expect(term).toBe(1);
      expect(await history(ns)).toEqual([expect.objectContaining({ term: 1, endReason: 'operator' })]);
      expect(await svc.getLeader({ ns })).toBeNull();
      expect(await svc.getCandidates({ ns })).toEqual([]);
    });

    test('bad options are ValidationErrors naming the parameter, and nothing is registered', async () => {
      const ns = freshNs();
      const work = async () => undefined;
      const cases: Array<[unknown, string]> = [
        [undefined, 'options'],
        [{ reason: 'r', ns }, 'options.operator'],
        [{ operator: '', reason: 'r', ns }, 'options.operator'],
        [{ operator: 'a'.repeat(101), reason: 'r', ns }, 'options.operator'],
        [{ operator: 'a', ns }, 'options.reason'],
        [{ operator: 'a', reason: 'r', ns, waitMs: -1 }, 'options.waitMs'],
        [{ operator: 'a', reason: 'r', ns, waitMs: Number.NaN }, 'options.waitMs'],
        [{ operator: 'a', reason: 'r', ns, signal: {} }, 'options.signal'],
        [{ operator: 'a', reason: 'r', ns: '' }, 'options.ns'],
        [{ operator: 'a', reason: 'r', ns, who: 'a' }, 'options.who'],
      ];
      for (const [options, parameter] of cases) {
        const error = await svc.runAsOperator(options as never, work).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ValidationError);
        expect(error).toMatchObject({ parameter });
      }
      const noWork = await svc.runAsOperator({ operator: 'a', reason: 'r', ns }, 'x' as never).catch((e: unknown) => e);
      expect(noWork).toMatchObject({ parameter: 'work' });
      expect(await svc.getCandidates({ ns })).toEqual([]);
      expect(await history(ns)).toEqual([]);
    });
  },
  { sharedOnly: true },
);
