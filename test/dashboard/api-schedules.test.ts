/**
 * The dashboard's schedules of a namespace on every database: each schedule with recorded runs
 * (by name), its newest runs newest slot first with state, attempt, term, candidate and error, the
 * bounds on both lists, hostile names and messages returned as they were stored, the next slot of
 * the schedules hosted by the loops given to it (unknown for the others), and a bad `ns` or
 * `electors` refused naming it.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, LeaderElector, LeaderElectorGroup } from 'gemstone-utils';
import { createDashboard, MAX_SCHEDULES_SHOWN, RUNS_SHOWN_PER_SCHEDULE, type Dashboard } from 'gemstone-utils/dashboard';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { databaseNow, leaderOf, runsStoreOf } from '../schedules/support';
import { getJson, serveDashboard, Served } from './support/http';

interface RunView {
  slot: number;
  state: string;
  attempt: number;
  term: number;
  candidateId: string;
  startedAt: number | null;
  finishedAt: number | null;
  error: string | null;
}
interface Schedules {
  ns: string;
  schedules: { name: string; hosted: boolean; nextSlot: number | null; runs: RunView[] }[];
  truncated: boolean;
}

const HOSTILE_NAME = '<img src=x onerror="alert(1)">';
const HOSTILE_ERROR = '</script><script>alert("boom")</script> & more';

describeEachDatabase('dashboard JSON: schedules', (db) => {
  let ds: DataSource;
  let dashboard: Dashboard;
  let served: Served;
  const get = (path: string) => getJson<Schedules>(`${served.url}${path}`);

  beforeAll(async () => {
    ds = await db.connect();
    dashboard = createDashboard({ dataSource: ds, onError: () => undefined });
    served = await serveDashboard(dashboard);
  });
  afterAll(async () => {
    await served?.close();
    await dashboard?.close();
  });

  test('each schedule with its newest runs: states, attempt, term, error as stored; another namespace apart', async () => {
    const [ns, other] = [freshNs(), freshNs()];
    const service = new ElectionService(ds);
    const [leader, otherLeader] = [await leaderOf(service, ns), await leaderOf(service, other)];
    const store = runsStoreOf(ds);
    const base = (await databaseNow(ds)).getTime() - 3_600_000;
    const at = (minute: number) => new Date(base + minute * 60_000);
    const busy = Array.from({ length: RUNS_SHOWN_PER_SCHEDULE + 2 }, (_, i) => i + 1);
    await store.record(busy.map((m) => ({ ns, name: 'busy', slot: at(m) })), leader, 'missed');
    const failedKey = { ns, name: HOSTILE_NAME, slot: at(5) };
    await store.claim(failedKey, leader, 3);
    await store.finish(failedKey, leader, 'failed', HOSTILE_ERROR);
    await store.claim({ ns, name: 'under-way', slot: at(20) }, leader, 3);
    await store.record([{ ns: other, name: 'elsewhere', slot: at(1) }], otherLeader, 'skipped');

    const { status, body } = await get(`/api/namespace/schedules?ns=${encodeURIComponent(ns)}`);
    const after = (await databaseNow(ds)).getTime();
    expect(status).toBe(200);
    expect(body.ns).toBe(ns);
    expect(body.truncated).toBe(false);
    // The page never read the database clock from this answer: it is no longer sent.
    expect(body).not.toHaveProperty('dbNow');
    expect(body.schedules.map((s) => s.name)).toEqual([HOSTILE_NAME, 'busy', 'under-way'].sort());

    const runsOf = (name: string) => body.schedules.find((s) => s.name === name)!.runs;
    // The newest of the busy schedule's runs, newest slot first; the two oldest left out.
    expect(runsOf('busy').map((r) => r.slot)).toEqual(busy.slice(2).reverse().map((m) => at(m).getTime()));
    expect(runsOf('busy').every((r) => r.state === 'missed' && r.term === leader.term && r.candidateId === leader.candidateId)).toBe(true);

    const [failed] = runsOf(HOSTILE_NAME);
    expect(failed).toMatchObject({ slot: at(5).getTime(), state: 'failed', attempt: 1, term: leader.term, candidateId: leader.candidateId, error: HOSTILE_ERROR });
    expect(failed!.finishedAt).toBeGreaterThanOrEqual(failed!.startedAt!);

    const [running] = runsOf('under-way');
    expect(running).toMatchObject({ slot: at(20).getTime(), state: 'running', attempt: 1, finishedAt: null, error: null });
    expect(running!.startedAt).toBeLessThanOrEqual(after);

    expect((await get(`/api/namespace/schedules?ns=${encodeURIComponent(other)}`)).body.schedules).toEqual([
      expect.objectContaining({ name: 'elsewhere', runs: [expect.objectContaining({ state: 'skipped', term: otherLeader.term })] }),
    ]);
  });

  test(`at most ${MAX_SCHEDULES_SHOWN} schedules, by name, and the answer says more exist; none for a namespace without runs`, async () => {
    const ns = freshNs();
    const leader = await leaderOf(new ElectionService(ds), ns);
    const slot = new Date((await databaseNow(ds)).getTime() - 60_000);
    const names = Array.from({ length: MAX_SCHEDULES_SHOWN + 1 }, (_, i) => `job-${String(i).padStart(3, '0')}`);
    await runsStoreOf(ds).record(names.map((name) => ({ ns, name, slot })), leader, 'missed');
    const { body } = await get(`/api/namespace/schedules?ns=${encodeURIComponent(ns)}`);
    expect(body.truncated).toBe(true);
    expect(body.schedules.map((s) => s.name)).toEqual(names.slice(0, MAX_SCHEDULES_SHOWN));
    expect(body.schedules.every((s) => s.runs.length === 1)).toBe(true);

    const empty = await get(`/api/namespace/schedules?ns=${encodeURIComponent(freshNs())}`);
    expect(empty.body).toMatchObject({ schedules: [], truncated: false });
  });

  test('the schedules the given loops host: their next slot, runs or not; one only the runs table knows: next slot unknown', async () => {
    const ns = freshNs();
    const leader = await leaderOf(new ElectionService(ds), ns);
    const slot = new Date((await databaseNow(ds)).getTime() - 60_000);
    await runsStoreOf(ds).record([{ ns, name: 'nightly', slot }, { ns, name: 'elsewhere', slot }], leader, 'missed');
    // Never started: they claim nothing, and their next slots come from their patterns. Yearly
    // slots, so the one the loop gives and the one the page got are the same slot.
    const elector = new LeaderElector({ dataSource: ds, ns });
    const group = new LeaderElectorGroup({ dataSource: ds, namespaces: [ns] });
    const nightly = elector.schedule({ name: 'nightly', cron: '0 3 1 1 *' }, () => undefined);
    const fresh = group.schedule(ns, { name: HOSTILE_NAME, cron: '30 2 1 1 *', timeZone: 'Europe/Berlin' }, () => undefined);
    group.schedule(freshNs(), { name: 'other-namespace', everyMs: 60_000 }, () => undefined);
    const hosting = createDashboard({ dataSource: ds, electors: [elector, group], onError: () => undefined });
    const hostingServed = await serveDashboard(hosting);
    const read = async (url: string) => (await getJson<Schedules>(`${url}/api/namespace/schedules?ns=${encodeURIComponent(ns)}`)).body.schedules;
    const byName = (schedules: Schedules['schedules']) => Object.fromEntries(schedules.map((s) => [s.name, s]));
    try {
      const shown = await read(hostingServed.url);
      expect(shown.map((s) => s.name)).toEqual(['elsewhere', 'nightly', HOSTILE_NAME].sort());
      const at = byName(shown);
      expect(at.nightly).toMatchObject({ hosted: true, nextSlot: nightly.nextSlot()!.getTime(), runs: [expect.objectContaining({ slot: slot.getTime(), state: 'missed' })] });
      expect(at[HOSTILE_NAME]).toEqual({ name: HOSTILE_NAME, hosted: true, nextSlot: fresh.nextSlot()!.getTime(), runs: [] });
      expect(at.elsewhere).toMatchObject({ hosted: false, nextSlot: null, runs: [expect.objectContaining({ state: 'missed' })] });
      expect(at.nightly!.nextSlot!).toBeGreaterThan(slot.getTime());

      // The dashboard without the loops knows the runs only.
      expect((await read(served.url)).map(({ name, hosted, nextSlot }) => ({ name, hosted, nextSlot }))).toEqual([
        { name: 'elsewhere', hosted: false, nextSlot: null },
        { name: 'nightly', hosted: false, nextSlot: null },
      ]);
      // A cancelled schedule is hosted no more: its recorded runs stay.
      await nightly.cancel();
      expect(byName(await read(hostingServed.url)).nightly).toMatchObject({ hosted: false, nextSlot: null, runs: [expect.objectContaining({ state: 'missed' })] });
    } finally {
      await hostingServed.close();
      await hosting.close();
      await Promise.all([elector.stop(), group.stop()]);
    }
    expect(() => createDashboard({ dataSource: ds, electors: [elector, {} as LeaderElector] })).toThrow(expect.objectContaining({ parameter: 'options.electors[1]' }));
  });

  test('a missing ns is refused naming the parameter', async () => {
    const { status, body } = await getJson<{ error: string; parameter: string }>(`${served.url}/api/namespace/schedules`);
    expect(status).toBe(400);
    expect(body.parameter).toBe('ns');
  });
});
