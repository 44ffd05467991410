/**
 * `LeaderElectorGroup.schedule`, on every database: each namespace's schedules run on the
 * leadership of that namespace, the same name in two namespaces is two schedules, and a
 * namespace added later runs its schedule once led; `remove(ns)` ends its runs.
 */
import { LeaderElectorGroup, LeaderElectorGroupError, ScheduledRun, ValidationError } from 'gemstone-utils';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';
import { runsOf } from './helpers';

const EVERY = 1000;

describeEachDatabase('schedules on a group', (db) => {
  test('per-namespace schedules: same name in two namespaces, a namespace added later, remove()', async () => {
    const ds = await db.connect();
    const [one, two, later] = [freshNs(), freshNs(), freshNs()];
    const group = new LeaderElectorGroup({ dataSource: ds, namespaces: [one, two], expireSeconds: 3, intervalMs: 300 });
    const errors: LeaderElectorGroupError[] = [];
    group.on('error', (error) => errors.push(error));
    const seen = new Map<string, ScheduledRun[]>();
    const job = (run: ScheduledRun) => {
      expect(group.lease(run.ns)?.term).toBe(run.lease.term);
      seen.set(run.ns, [...(seen.get(run.ns) ?? []), run]);
    };
    for (const ns of [one, two, later]) group.schedule(ns, { name: 'sweep', everyMs: EVERY }, job);
    expect(() => group.schedule(one, { name: 'sweep', everyMs: EVERY }, job)).toThrow(ValidationError);
    let caught: unknown;
    try {
      group.schedule('', { name: 'x', everyMs: EVERY }, job);
    } catch (error) {
      caught = error;
    }
    expect((caught as ValidationError).parameter).toBe('ns');
    const count = (ns: string) => seen.get(ns)?.length ?? 0;
    try {
      await group.start();
      await waitFor('two runs in each namespace', () => count(one) >= 2 && count(two) >= 2, 20_000);
      // Not campaigned for: nothing runs.
      expect(count(later)).toBe(0);
      await group.add(later);
      await waitFor('two runs in the added namespace', () => count(later) >= 2, 20_000);
      await group.remove(one);
      const afterRemove = count(one);
      await waitFor('two more runs in the others', () => count(two) >= afterRemove + 2 && count(later) >= 4, 20_000);
      expect(count(one)).toBe(afterRemove);
    } finally {
      await group.stop();
    }
    for (const ns of [one, two, later]) {
      const runs = await runsOf(ds, ns, 'sweep');
      // A slot claimed just as its leadership ended (remove, stop) is not run: it stays running,
      // for the next leader. Only the newest can be so.
      const running = runs.filter((r) => r.state === 'running');
      expect(running.length).toBeLessThanOrEqual(1);
      if (running.length === 1) expect(running[0]).toBe(runs[runs.length - 1]);
      const done = runs.filter((r) => r.state === 'done');
      expect(done.map((r) => r.slot.getTime())).toEqual(seen.get(ns)!.map((r) => r.slot.getTime()));
      expect(runs.every((r) => r.candidateId === group.candidateId)).toBe(true);
      expect(done.length + running.length).toBe(runs.length);
    }
    expect(errors).toEqual([]);
  });
});
