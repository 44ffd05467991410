/**
 * start() and stop() called in quick succession: the latest call wins, every promise settles,
 * and a stopped elector leaves no tick behind.
 */
import type { DataSource } from 'typeorm';
import { LeaderElector } from 'gemstone-utils';
import { describeEachDatabase, query, sleep } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { recordingElector, waitFor } from './helpers';

const EXPIRE = 2;
const INTERVAL = 200;

describeEachDatabase('LeaderElector start/stop: latest call wins', (db) => {
  let ds: DataSource;
  const made: LeaderElector[] = [];

  beforeAll(async () => {
    ds = await db.connect();
  });
  afterEach(async () => {
    await Promise.all(made.splice(0).map((e) => e.stop()));
  });

  function make(ns: string) {
    const recorded = recordingElector(ds, { ns, expireSeconds: EXPIRE, intervalMs: INTERVAL });
    made.push(recorded.elector);
    return recorded;
  }

  async function candidateRows(ns: string): Promise<number> {
    const rows = await query(ds, 'SELECT candidate_id FROM gemstone_election_candidate WHERE ns = ?', [ns]);
    return rows.length;
  }

  /** A stopped elector must not tick again: its candidate row stays deleted over several periods. */
  async function expectNoMoreTicks(ns: string) {
    expect(await candidateRows(ns)).toBe(0);
    await sleep(INTERVAL * 3);
    expect(await candidateRows(ns)).toBe(0);
  }

  test('running, then stop(); start(): the elector runs again and leads', async () => {
    const ns = freshNs();
    const { elector } = make(ns);
    await elector.start();
    expect(elector.isLeader).toBe(true);
    const stopped = elector.stop();
    await elector.start();
    await stopped;
    expect(elector.running).toBe(true);
    await waitFor('the elector to lead again', () => elector.isLeader);
    expect(elector.term).toBe(2);
    // Still ticking: the candidate row keeps being renewed.
    await sleep(INTERVAL * 3);
    expect(elector.isLeader).toBe(true);
    expect(await candidateRows(ns)).toBe(1);
  });

  test('idle, then start(); stop(): ends stopped, both promises resolve, no tick afterwards', async () => {
    const ns = freshNs();
    const { elector } = make(ns);
    const started = elector.start();
    const stopped = elector.stop();
    await Promise.all([started, stopped]);
    expect(elector.running).toBe(false);
    expect(elector.isLeader).toBe(false);
    await expectNoMoreTicks(ns);
  });

  test('start(); stop(); start(): runs', async () => {
    const ns = freshNs();
    const { elector } = make(ns);
    const first = elector.start();
    const stopped = elector.stop();
    const second = elector.start();
    await Promise.all([first, stopped, second]);
    expect(elector.running).toBe(true);
    await waitFor('the elector to lead', () => elector.isLeader);
    await sleep(INTERVAL * 3);
    expect(elector.isLeader).toBe(true);
  });

  test('running, then stop(); start(); stop(): ends stopped, no tick afterwards', async () => {
    const ns = freshNs();
    const { elector } = make(ns);
    await elector.start();
    const a = elector.stop();
    const b = elector.start();
    const c = elector.stop();
    await Promise.all([a, b, c]);
    expect(elector.running).toBe(false);
    expect(elector.isLeader).toBe(false);
    await expectNoMoreTicks(ns);
  });

  test('running, then start(); stop() while a stop is in flight, then start() again: runs', async () => {
    const ns = freshNs();
    const { elector } = make(ns);
    await elector.start();
    const calls = [elector.stop(), elector.start(), elector.stop(), elector.start()];
    await Promise.all(calls);
    expect(elector.running).toBe(true);
    await waitFor('the elector to lead', () => elector.isLeader);
    expect(await candidateRows(ns)).toBe(1);
  });
});
