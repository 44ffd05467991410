/**
 * The protocol rules and the schema (docs/protocol.md, docs/databases.md), on every database.
 */
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';
import { instantMs, ns as freshNs, plainUtcMs } from '../support/rows';

describeEachDatabase('election protocol', (db) => {
  let ds: DataSource;
  let svc: ElectionService;
  /** Expiry short enough to wait out in a test, long enough for a slow shared machine. */
  const SHORT = 1.5;

  beforeAll(async () => {
    ds = await db.connect();
    svc = new ElectionService(ds);
  });

  async function candidateRow(ns: string, id: string) {
    const [row] = await query(ds, 'SELECT * FROM gemstone_election_candidate WHERE ns = ? AND candidate_id = ?', [ns, id]);
    return row;
  }
  async function leaderRow(ns: string) {
    const [row] = await query(ds, 'SELECT * FROM gemstone_election_leader WHERE ns = ?', [ns]);
    return row;
  }

  test('rule 1: registerCandidate creates the row with expires_at = now + expireSeconds; heartbeat extends it', async () => {
    const ns = freshNs();
    const id = uuid();
    const service = new ElectionService(ds, { expireSeconds: 120 });
    await service.registerCandidate(id, { ns });
    const first = await candidateRow(ns, id);
    expect(first).toBeDefined();
    expect(instantMs(first!.expires_at) - instantMs(first!.last_heartbeat_at)).toBeGreaterThanOrEqual(119_990);
    expect(instantMs(first!.expires_at) - instantMs(first!.last_heartbeat_at)).toBeLessThanOrEqual(120_010);

    await sleep(20);
    await service.heartbeat(id, { ns });
    const second = await candidateRow(ns, id);
    expect(instantMs(second!.last_heartbeat_at)).toBeGreaterThan(instantMs(first!.last_heartbeat_at));
    expect(instantMs(second!.expires_at)).toBeGreaterThan(instantMs(first!.expires_at));
    const count = await query(ds, 'SELECT COUNT(*) AS n FROM gemstone_election_candidate WHERE ns = ?', [ns]);
    expect(Number(count[0]!.n)).toBe(1);
  });

  test('candidate ids of any case are stored and returned lower-case', async () => {
    const ns = freshNs();
    const id = uuid().toUpperCase();
    expect(await svc.elect(id, { ns })).toBe(id.toLowerCase());
    expect(await svc.isLeader(id, { ns })).toBe(true);
    expect(await svc.listCandidates({ ns })).toEqual([id.toLowerCase()]);
    expect((await leaderRow(ns))!.leader_id).toBe(id.toLowerCase());
  });

  test('rule 2: the first elect creates the leader row and takes the lease with term 1', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    expect(await leaderRow(ns)).toBeUndefined();
    expect(await svc.elect(a, { ns })).toBe(a);
    const info = await svc.getLeader({ ns });
    expect(info).toMatchObject({ ns, leaderId: a, term: 1 });
    expect(info!.leaseExpiresAt.getTime() - info!.updatedAt.getTime()).toBeGreaterThanOrEqual(59_990);
    expect(info!.leaseExpiresAt.getTime() - info!.updatedAt.getTime()).toBeLessThanOrEqual(60_010);
    // elect touches the caller's candidate row like a heartbeat
    expect(await svc.listCandidates({ ns })).toEqual([a]);
    // another candidate does not preempt an unexpired lease
    expect(await svc.elect(b, { ns })).toBe(a);
    expect(await svc.isLeader(b, { ns })).toBe(false);
    expect(await svc.listCandidates({ ns })).toEqual([a, b].sort());
    expect((await svc.getLeader({ ns }))!.term).toBe(1);
  });

  test('rule 2: renewal extends the lease and keeps the term', async () => {
    const ns = freshNs();
    const a = uuid();
    await svc.elect(a, { ns });
    const before = await svc.getLeader({ ns });
    await sleep(30);
    expect(await svc.elect(a, { ns })).toBe(a);
    const after = await svc.getLeader({ ns });
    expect(after!.term).toBe(before!.term);
    expect(after!.leaseExpiresAt.getTime()).toBeGreaterThan(before!.leaseExpiresAt.getTime());
    expect(after!.updatedAt.getTime()).toBeGreaterThan(before!.updatedAt.getTime());
  });

  test('rule 2: a follower elect changes nothing on the leader row', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    const before = await leaderRow(ns);
    await sleep(20);
    await svc.elect(b, { ns });
    expect(await leaderRow(ns)).toEqual(before);
  });

  test('rules 2–3: an expired lease is taken over with term + 1; the old leader is no longer leader', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    const short = new ElectionService(ds, { expireSeconds: SHORT });
    expect(await short.elect(a, { ns })).toBe(a);
    expect(await short.isLeader(a, { ns })).toBe(true);
    await sleep(SHORT * 1000 + 300);
    // Expired: leader_id still names a, but nobody leads.
    expect((await leaderRow(ns))!.leader_id).toBe(a);
    expect(await short.isLeader(a, { ns })).toBe(false);
    expect(await short.getLeader({ ns })).toBeNull();
    expect(await short.elect(b, { ns })).toBe(b);
    expect(await short.getLeader({ ns })).toMatchObject({ leaderId: b, term: 2 });
    expect(await short.isLeader(a, { ns })).toBe(false);
  });

  test('term: re-acquiring an own expired lease increments it; the term never decreases', async () => {
    const ns = freshNs();
    const a = uuid();
    const short = new ElectionService(ds, { expireSeconds: SHORT });
    const terms: number[] = [];
    await short.elect(a, { ns });
    terms.push((await short.getLeader({ ns }))!.term);
    await sleep(SHORT * 1000 + 300);
    await short.elect(a, { ns });
    terms.push((await short.getLeader({ ns }))!.term);
    await short.resign(a, { ns });
    await short.elect(a, { ns });
    terms.push((await short.getLeader({ ns }))!.term);
    await short.unregisterCandidate(a, { ns });
    expect(Number((await leaderRow(ns))!.term)).toBe(3);
    await short.elect(uuid(), { ns });
    terms.push((await short.getLeader({ ns }))!.term);
    expect(terms).toEqual([1, 2, 3, 4]);
  });

  test('rule 4: listCandidates returns only unexpired candidates, sorted ascending', async () => {
    const ns = freshNs();
    const ids = [uuid(), uuid(), uuid(), uuid()];
    for (const id of ids) await svc.registerCandidate(id, { ns });
    const short = new ElectionService(ds, { expireSeconds: SHORT });
    const stale = uuid();
    await short.registerCandidate(stale, { ns });
    expect(await svc.listCandidates({ ns })).toEqual([...ids, stale].sort());
    await sleep(SHORT * 1000 + 300);
    expect(await svc.listCandidates({ ns })).toEqual([...ids].sort());
    expect(await svc.listCandidates({ ns: freshNs() })).toEqual([]);
  });

  test('rule 5: unregistering the leader deletes its row and vacates the lease; the next elect takes it', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    await svc.registerCandidate(b, { ns });
    await svc.unregisterCandidate(a, { ns });
    expect(await candidateRow(ns, a)).toBeUndefined();
    const row = await leaderRow(ns);
    expect(row!.leader_id).toBeNull();
    expect(row!.lease_expires_at).toBeNull();
    expect(Number(row!.term)).toBe(1);
    expect(await svc.getLeader({ ns })).toBeNull();
    expect(await svc.elect(b, { ns })).toBe(b);
    expect((await svc.getLeader({ ns }))!.term).toBe(2);
  });

  test('rule 5: unregistering a follower leaves the leader alone', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    await svc.elect(b, { ns });
    const before = await leaderRow(ns);
    await svc.unregisterCandidate(b, { ns });
    expect(await leaderRow(ns)).toEqual(before);
    expect(await svc.listCandidates({ ns })).toEqual([a]);
    // unregistering an unknown candidate in an unknown namespace is harmless
    await expect(svc.unregisterCandidate(uuid(), { ns: freshNs() })).resolves.toBeUndefined();
  });

  test('rule 5: resign steps down but stays a candidate; true only for an unexpired lease', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    await svc.elect(b, { ns });
    expect(await svc.resign(b, { ns })).toBe(false);
    expect(await svc.isLeader(a, { ns })).toBe(true);
    expect(await svc.resign(a, { ns })).toBe(true);
    expect(await svc.getLeader({ ns })).toBeNull();
    expect(await svc.listCandidates({ ns })).toEqual([a, b].sort());
    expect(await svc.resign(a, { ns })).toBe(false);
    expect(await svc.resign(a, { ns: freshNs() })).toBe(false);
  });

  test('rule 5: resign with an expired lease vacates the row and returns false', async () => {
    const ns = freshNs();
    const a = uuid();
    const short = new ElectionService(ds, { expireSeconds: SHORT });
    await short.elect(a, { ns });
    await sleep(SHORT * 1000 + 300);
    expect(await short.resign(a, { ns })).toBe(false);
    const row = await leaderRow(ns);
    expect(row!.leader_id).toBeNull();
    expect(row!.lease_expires_at).toBeNull();
  });

  test('namespaces are isolated and default to "default"', async () => {
    const [a, b] = [uuid(), uuid()];
    const ns1 = freshNs();
    const ns2 = freshNs();
    expect(await svc.elect(a, { ns: ns1 })).toBe(a);
    expect(await svc.elect(b, { ns: ns2 })).toBe(b);
    expect(await svc.isLeader(a, { ns: ns2 })).toBe(false);
    const c = uuid();
    const leader = await svc.elect(c);
    expect(await svc.getLeader()).toMatchObject({ ns: 'default', leaderId: leader });
    expect(await svc.listCandidates()).toContain(c);
  });

  test('setExpire changes the expiry of later calls and is validated', async () => {
    const service = new ElectionService(ds);
    expect(service.expireSeconds).toBe(60);
    service.setExpire(5);
    expect(service.expireSeconds).toBe(5);
    const ns = freshNs();
    await service.elect(uuid(), { ns });
    const info = await service.getLeader({ ns });
    expect(info!.leaseExpiresAt.getTime() - info!.updatedAt.getTime()).toBeGreaterThanOrEqual(4_990);
    expect(info!.leaseExpiresAt.getTime() - info!.updatedAt.getTime()).toBeLessThanOrEqual(5_010);
    expect(() => service.setExpire(0)).toThrow(/seconds/);
    expect(service.expireSeconds).toBe(5);
  });

  test('schema: term is a number in the API and BIGINT in the table; instants are readable with plain SQL', async () => {
    const ns = freshNs();
    await svc.elect(uuid(), { ns });
    const info = await svc.getLeader({ ns });
    expect(typeof info!.term).toBe('number');
    const lease = await plainUtcMs(ds, db.kind, 'gemstone_election_leader', 'lease_expires_at', ns);
    const updated = await plainUtcMs(ds, db.kind, 'gemstone_election_leader', 'updated_at', ns);
    expect(Math.abs(lease - info!.leaseExpiresAt.getTime())).toBeLessThanOrEqual(1);
    expect(Math.abs(updated - info!.updatedAt.getTime())).toBeLessThanOrEqual(1);
    // UTC: within a minute of the real time (host and database share this machine's clock)
    expect(Math.abs(updated - Date.now())).toBeLessThan(60_000);
  });
});
