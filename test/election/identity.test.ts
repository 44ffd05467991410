/**
 * Candidate identity on the service: metadata stored and returned (getLeader, assertLeader,
 * getCandidates), kept when omitted, validated (nothing changes on bad input); eligibility and
 * priority decided by the elect statement of every database, also inside the caller's
 * transaction: an ineligible candidate never acquires, a vacant lease goes to the preferred
 * candidate, a leader renews but is told to hand over only to strictly higher priority.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, MAX_METADATA_BYTES, ValidationError } from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, query, snapshot, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

describeEachDatabase('candidate identity', (db) => {
  let ds: DataSource;
  let svc: ElectionService;

  beforeAll(async () => {
    ds = await db.connect();
    svc = new ElectionService(ds, { expireSeconds: 30 });
  });

  test('metadata given to registerCandidate and elect comes back from getLeader, assertLeader and getCandidates', async () => {
    const ns = freshNs();
    const [a, b, c] = [uuid(), uuid(), uuid()].sort();
    const metaA = { host: 'web-1', pid: 4242, tags: ['blue', null, true], nested: { ünïcode: '界', n: -1.5 } };
    await svc.registerCandidate(b!, { ns, metadata: { host: 'web-2' }, priority: -3 });
    expect(await svc.elect(a!, { ns, metadata: metaA })).toBe(a);
    await svc.heartbeat(c!, { ns, eligible: false });

    const leader = await svc.getLeader({ ns });
    expect(leader).toMatchObject({ ns, leaderId: a, term: 1, metadata: metaA });
    const fenced = await inCallerTransaction(ds, (session) => svc.assertLeader(a!, { ns, session }));
    expect(fenced.metadata).toEqual(metaA);

    const candidates = await svc.getCandidates({ ns });
    expect(candidates.map((candidate) => candidate.candidateId)).toEqual([a, b, c]);
    expect(candidates.map(({ priority, eligible, metadata }) => ({ priority, eligible, metadata }))).toEqual([
      { priority: 0, eligible: true, metadata: metaA },
      { priority: -3, eligible: true, metadata: { host: 'web-2' } },
      { priority: 0, eligible: false, metadata: null },
    ]);
    for (const candidate of candidates) {
      expect(candidate.lastHeartbeatAt).toBeInstanceOf(Date);
      expect(candidate.expiresAt.getTime() - candidate.lastHeartbeatAt.getTime()).toBeCloseTo(30_000, -1);
    }
    expect(await svc.listCandidates({ ns })).toEqual([a, b, c]); // still plain ids
  });

  test('omitted options keep what is stored; given ones replace it; the stored text is the JSON given', async () => {
    const ns = freshNs();
    const a = uuid();
    await svc.registerCandidate(a, { ns, metadata: { v: 1 }, priority: 7, eligible: true });
    await svc.elect(a, { ns });
    await svc.heartbeat(a, { ns });
    expect((await svc.getCandidates({ ns }))[0]).toMatchObject({ priority: 7, eligible: true, metadata: { v: 1 } });
    await svc.heartbeat(a, { ns, metadata: { v: 2, host: 'h' } });
    expect((await svc.getLeader({ ns }))?.metadata).toEqual({ v: 2, host: 'h' });
    const [row] = await query<{ metadata: string }>(ds, 'SELECT metadata FROM gemstone_election_candidate WHERE ns = ?', [ns]);
    expect(row!.metadata).toBe('{"v":2,"host":"h"}');
  });

  test('a leader whose candidate row is gone, or metadata written behind the library as non-objects, reads as null', async () => {
    const ns = freshNs();
    const a = uuid();
    await svc.elect(a, { ns, metadata: { x: 1 } });
    await query(ds, 'UPDATE gemstone_election_candidate SET metadata = ? WHERE ns = ?', ['[1,2]', ns]);
    expect((await svc.getLeader({ ns }))?.metadata).toBeNull();
    await query(ds, 'UPDATE gemstone_election_candidate SET metadata = ? WHERE ns = ?', ['not json', ns]);
    expect((await svc.getCandidates({ ns }))[0]?.metadata).toBeNull();
    await query(ds, 'DELETE FROM gemstone_election_candidate WHERE ns = ?', [ns]);
    expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: a, metadata: null });
  });

  test('bad metadata, priority or eligible: ValidationError naming the parameter, nothing changed', async () => {
    const ns = freshNs();
    const a = uuid();
    await svc.elect(a, { ns, metadata: { ok: true } });
    const before = await snapshot(ds);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const tooBig = { blob: 'x'.repeat(MAX_METADATA_BYTES) };
    const bad: Array<[string, Record<string, unknown>]> = [
      ['options.metadata', { metadata: null }],
      ['options.metadata', { metadata: 'host=a' }],
      ['options.metadata', { metadata: [1, 2] }],
      ['options.metadata', { metadata: new Date() }],
      ['options.metadata', { metadata: { when: new Date() } }],
      ['options.metadata', { metadata: { f: () => 1 } }],
      ['options.metadata', { metadata: { u: undefined } }],
      ['options.metadata', { metadata: { n: 10n } }],
      ['options.metadata', { metadata: { n: Number.NaN } }],
      ['options.metadata', { metadata: { s: '\uD800' } }],
      ['options.metadata', { metadata: cyclic }],
      ['options.metadata', { metadata: tooBig }],
      ['options.priority', { priority: 1.5 }],
      ['options.priority', { priority: '1' }],
      ['options.priority', { priority: 2 ** 31 }],
      ['options.eligible', { eligible: 'false' }],
      ['options.eligible', { eligible: 0 }],
    ];
    for (const [parameter, options] of bad) {
      for (const call of [
        () => svc.elect(a, { ns, ...options } as never),
        () => svc.registerCandidate(uuid(), { ns, ...options } as never),
        () => svc.heartbeat(a, { ns, ...options } as never),
      ]) {
        const error = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect({ options, error }).toEqual({ options, error: expect.any(ValidationError) });
        expect({ options, parameter: (error as ValidationError).parameter }).toEqual({ options, parameter });
      }
    }
    expect(await snapshot(ds)).toEqual(before);
    const exactly = { s: 'x'.repeat(MAX_METADATA_BYTES - '{"s":""}'.length) };
    expect(await svc.elect(a, { ns, metadata: exactly })).toBe(a); // exactly 4096 bytes fits
    expect((await svc.getLeader({ ns }))?.metadata).toEqual(exactly);
  });

  test('an ineligible candidate registers and observes but never acquires, even alone', async () => {
    const ns = freshNs();
    const [watcher, worker] = [uuid(), uuid()];
    expect(await svc.elect(watcher, { ns, eligible: false })).toBeNull();
    expect(await svc.electOutcome(watcher, { ns })).toMatchObject({ leaderId: null, isLeader: false, term: 0 }); // the stored flag decides
    expect(await svc.getLeader({ ns })).toBeNull();
    expect(await svc.listCandidates({ ns })).toEqual([watcher]);
    expect(await svc.elect(worker, { ns })).toBe(worker);
    expect(await svc.elect(watcher, { ns })).toBe(worker);
    await svc.resign(worker, { ns });
    expect(await svc.elect(watcher, { ns })).toBeNull();
    expect(await svc.elect(watcher, { ns, eligible: true })).toBe(watcher); // made eligible: now it may
  });

  test('a vacant lease goes to the preferred candidate: lower priorities defer, ineligible or expired ones do not count', async () => {
    const ns = freshNs();
    const [low, high, observer] = [uuid(), uuid(), uuid()];
    await svc.registerCandidate(observer, { ns, priority: 100, eligible: false });
    await svc.registerCandidate(high, { ns, priority: 5 });
    expect(await svc.electOutcome(low, { ns, priority: 1 })).toMatchObject({ leaderId: null, isLeader: false });
    expect(await svc.elect(high, { ns })).toBe(high);
    expect(await svc.elect(low, { ns })).toBe(high);

    // An expired preferred candidate does not hold the lease hostage.
    const other = freshNs();
    await new ElectionService(ds, { expireSeconds: 0.2 }).registerCandidate(high, { ns: other, priority: 5 });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await svc.elect(low, { ns: other, priority: 1 })).toBe(low);
  });

  test('a leader renews and is told to hand over only to a live eligible candidate of strictly higher priority', async () => {
    const ns = freshNs();
    const [leader, peer, better] = [uuid(), uuid(), uuid()];
    expect(await svc.electOutcome(leader, { ns, priority: 3 })).toMatchObject({ isLeader: true, acquired: true, handOver: false, term: 1 });
    await svc.registerCandidate(peer, { ns, priority: 3 });
    await svc.registerCandidate(uuid(), { ns, priority: 9, eligible: false });
    expect(await svc.electOutcome(leader, { ns })).toMatchObject({ isLeader: true, acquired: false, handOver: false, term: 1 });
    await svc.registerCandidate(better, { ns, priority: 4 });
    // Renewed, not vacated: the caller's work has to stop before the lease is given up.
    expect(await svc.electOutcome(leader, { ns })).toMatchObject({ leaderId: leader, isLeader: true, handOver: true, term: 1 });
    expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: leader });
    expect(await svc.electOutcome(better, { ns })).toMatchObject({ leaderId: leader, isLeader: false }); // never preempted
    expect(await svc.resign(leader, { ns })).toBe(true);
    expect(await svc.electOutcome(leader, { ns })).toMatchObject({ leaderId: null, isLeader: false }); // defers now
    expect(await svc.electOutcome(better, { ns })).toMatchObject({ leaderId: better, isLeader: true, acquired: true, handOver: false, term: 2 });
    // A leader made ineligible is told to hand over too.
    expect(await svc.electOutcome(better, { ns, eligible: false })).toMatchObject({ isLeader: true, handOver: true });
  });

  test('the same decisions inside the caller’s transaction', async () => {
    const ns = freshNs();
    const [low, high] = [uuid(), uuid()];
    await svc.registerCandidate(high, { ns, priority: 2 });
    const deferred = await inCallerTransaction(ds, (session) => svc.electOutcome(low, { ns, session, metadata: { in: 'tx' } }));
    expect(deferred).toMatchObject({ leaderId: null, isLeader: false, wasRegistered: false });
    expect(await inCallerTransaction(ds, (session) => svc.electOutcome(high, { ns, session }))).toMatchObject({ isLeader: true, wasRegistered: true });
    await svc.registerCandidate(low, { ns, priority: 3 });
    expect(await inCallerTransaction(ds, (session) => svc.electOutcome(high, { ns, session }))).toMatchObject({ isLeader: true, handOver: true });
    expect((await svc.getCandidates({ ns })).find((c) => c.candidateId === low)?.metadata).toEqual({ in: 'tx' });
  });

  test('wasRegistered tells whether the elect found the caller’s row', async () => {
    const ns = freshNs();
    const a = uuid();
    expect((await svc.electOutcome(a, { ns })).wasRegistered).toBe(false);
    expect((await svc.electOutcome(a, { ns })).wasRegistered).toBe(true);
    const b = uuid();
    expect((await svc.electOutcome(b, { ns })).wasRegistered).toBe(false); // follower path
    expect((await svc.electOutcome(b, { ns })).wasRegistered).toBe(true);
  });
});
