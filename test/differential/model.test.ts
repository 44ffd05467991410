/**
 * The reference model itself, on hand-worked scenarios: what the differential runs compare the
 * databases with must be right on its own (the decision it applies is tested exhaustively in
 * test/election/decision.test.ts).
 */
import * as m from './model';

const E = 50_000;
const [A, B, C] = ['a', 'b', 'c'];

describe('reference model', () => {
  test('elect: take, follow, renew, lapse and takeover with the lapsed term closed at its lease end', () => {
    const s = m.emptyModel(E);
    expect(m.elect(s, 'x', A, {}, 0)).toEqual({ leaderId: A, term: 1, isLeader: true, acquired: true, handOver: false, wasRegistered: false });
    expect(m.elect(s, 'x', B, {}, 10)).toEqual({ leaderId: A, term: 1, isLeader: false, acquired: false, handOver: false, wasRegistered: false });
    expect(m.elect(s, 'x', A, {}, 20)).toMatchObject({ term: 1, acquired: false });
    expect(s.ns.get('x')!.leader!.leaseExpiresAt).toBe(20 + E);
    // A's lease and both candidate rows lapse; B comes back first.
    expect(m.elect(s, 'x', B, {}, 20 + E)).toMatchObject({ leaderId: B, term: 2, acquired: true, wasRegistered: true });
    expect(s.ns.get('x')!.history.get(1)).toEqual({ leaderId: A, acquiredAt: 0, endedAt: 20 + E, endReason: 'expired' });
    expect(s.ns.get('x')!.history.get(2)).toEqual({ leaderId: B, acquiredAt: 20 + E, endedAt: null, endReason: null });
  });

  test('elect: an outranked or ineligible caller defers, and the lapsed term stays open', () => {
    const s = m.emptyModel(E);
    m.elect(s, 'x', A, {}, 0);
    m.touch(s, 'x', C, { priority: 5 }, E); // live, eligible, higher
    expect(m.elect(s, 'x', B, {}, E + 1)).toMatchObject({ leaderId: null, term: 1, isLeader: false });
    expect(m.elect(s, 'x', A, { eligible: false }, E + 2)).toMatchObject({ leaderId: null, term: 1, isLeader: false });
    expect(s.ns.get('x')!.history.get(1)!.endedAt).toBeNull();
    expect(m.elect(s, 'x', C, {}, E + 3)).toMatchObject({ leaderId: C, term: 2, acquired: true });
  });

  test('resign: true and closed now when live; false and closed at the lease end when lapsed', () => {
    const s = m.emptyModel(E);
    m.elect(s, 'x', A, {}, 0);
    expect(m.vacate(s, 'x', B, 'resigned', 5)).toBe(false);
    expect(m.vacate(s, 'x', A, 'resigned', 5)).toBe(true);
    expect(s.ns.get('x')!.history.get(1)).toMatchObject({ endedAt: 5, endReason: 'resigned' });
    m.elect(s, 'x', A, {}, 10);
    expect(m.vacate(s, 'x', A, 'unregistered', 10 + E + 1)).toBe(false);
    expect(s.ns.get('x')!.history.get(2)).toMatchObject({ endedAt: 10 + E, endReason: 'expired' });
    expect(s.ns.get('x')!.candidates.has(A)).toBe(false);
    expect(s.ns.get('x')!.leader).toEqual({ leaderId: null, term: 2, leaseExpiresAt: null });
  });

  test('tick with balance: the members split the namespaces, acquisitions capped in namespace order', () => {
    const s = m.emptyModel(E);
    const nss = ['n1', 'n2', 'n3', 'n4', 'n5'];
    for (const ns of nss) m.touch(s, ns, B, { priority: 1 }, 0);
    // A and B are the members (priority 1): 5 namespaces → a (first id) leads 3, b 2.
    const r = m.tick(s, { namespaces: nss, candidateId: A, priority: 1, eligible: true, balance: true }, 1);
    expect(r.members).toEqual([A, B]);
    expect(r.outcomes.map((o) => o.isLeader)).toEqual([true, true, true, false, false]);
    expect(r.unregistered).toBe(5);
    const again = m.tick(s, { namespaces: nss, candidateId: B, priority: 1, eligible: true, balance: true }, 2);
    expect(again.outcomes.map((o) => o.leaderId)).toEqual([A, A, A, B, B]);
    // A lower-priority candidate is no member: it takes nothing with balance, what is open without.
    const low = m.tick(s, { namespaces: ['n6'], candidateId: C, priority: 0, eligible: true, balance: true }, 3);
    expect(low.members).toEqual([C]);
    expect(low.outcomes[0]).toMatchObject({ isLeader: true, term: 1 });
  });

  test('tick: a skipped namespace is unknown and unchanged, but heartbeated', () => {
    const s = m.emptyModel(E);
    m.elect(s, 'x', A, {}, 0);
    const r = m.tick(s, { namespaces: ['x'], candidateId: A, priority: 0, eligible: true, balance: false, skipped: new Set(['x']) }, E - 1);
    expect(r.outcomes[0]).toEqual({ ns: 'x', leaderId: null, term: null, isLeader: false, acquired: false, handOver: false });
    expect(s.ns.get('x')!.leader!.leaseExpiresAt).toBe(E);
    expect(s.ns.get('x')!.candidates.get(A)!.expiresAt).toBe(E - 1 + E);
  });

  test('fence: passes only for the live holder under its term, and records the fenced write', () => {
    const s = m.emptyModel(E);
    m.elect(s, 'x', A, {}, 0);
    expect(m.fence(s, 'x', A, 1, 1, true)).toMatchObject({ pass: true, term: 1 });
    expect(m.fence(s, 'x', A, 2, 1, true)).toMatchObject({ pass: false, leaderId: A, term: 1 });
    expect(m.fence(s, 'x', B, undefined, 1, true)).toMatchObject({ pass: false, leaderId: A, term: 1 });
    expect(m.fence(s, 'x', A, undefined, E, true)).toMatchObject({ pass: false, leaderId: null, term: 1 });
    expect(m.fence(s, 'y', A, undefined, 1, true)).toMatchObject({ pass: false, leaderId: null, term: null });
    expect(s.fenced).toEqual([{ ns: 'x', term: 1, writer: A }]);
  });
});
