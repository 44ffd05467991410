/**
 * The reference decision (src/election/decision.ts), exhaustively: every combination of small
 * domains of its inputs, against a table written out by hand (not derived from the code) and
 * the protocol's invariants.
 */
import { decideElect, decideFence, decideVacate, isLive, type CallerStanding, type LeaseRow } from '../../dist/src/election/decision';
import { decide } from '../../dist/src/election/store';

const ME = 'me';
const OTHER = 'other';
const NOW = 1_000_000;
const EXPIRE = 60_000;

/** Where the lease stands for the caller, as the hand-written table names it. */
type LeaseCase = 'no row' | 'vacant' | 'own live' | 'own at end' | 'own lapsed' | 'other live' | 'other at end' | 'other lapsed';

function rowOf(c: LeaseCase, term: number): LeaseRow | undefined {
  switch (c) {
    case 'no row':
      return undefined;
    case 'vacant':
      return { leaderId: null, term, leaseExpiresAt: null };
    case 'own live':
      return { leaderId: ME, term, leaseExpiresAt: NOW + 1 };
    case 'own at end':
      return { leaderId: ME, term, leaseExpiresAt: NOW };
    case 'own lapsed':
      return { leaderId: ME, term, leaseExpiresAt: NOW - 30_000 };
    case 'other live':
      return { leaderId: OTHER, term, leaseExpiresAt: NOW + 1 };
    case 'other at end':
      return { leaderId: OTHER, term, leaseExpiresAt: NOW };
    case 'other lapsed':
      return { leaderId: OTHER, term, leaseExpiresAt: NOW - 30_000 };
  }
}
const LEASE_CASES: LeaseCase[] = ['no row', 'vacant', 'own live', 'own at end', 'own lapsed', 'other live', 'other at end', 'other lapsed'];
/** A lease that ends exactly now has ended (hand-written, not computed). */
const LIVE: Record<LeaseCase, boolean> = {
  'no row': false,
  vacant: false,
  'own live': true,
  'own at end': false,
  'own lapsed': false,
  'other live': true,
  'other at end': false,
  'other lapsed': false,
};

type Rank = 'eligible, unrivalled' | 'eligible, outranked' | 'ineligible, unrivalled' | 'ineligible, outranked';

/** The hand-written table: lease case × rank → branch. */
const TABLE: Record<LeaseCase, Record<Rank, string>> = {
  'no row': { 'eligible, unrivalled': 'T0', 'eligible, outranked': 'D2', 'ineligible, unrivalled': 'D1', 'ineligible, outranked': 'D1' },
  vacant: { 'eligible, unrivalled': 'T1', 'eligible, outranked': 'D2', 'ineligible, unrivalled': 'D1', 'ineligible, outranked': 'D1' },
  'own live': { 'eligible, unrivalled': 'R', 'eligible, outranked': 'H', 'ineligible, unrivalled': 'H', 'ineligible, outranked': 'H' },
  'own at end': { 'eligible, unrivalled': 'T2', 'eligible, outranked': 'D2', 'ineligible, unrivalled': 'D1', 'ineligible, outranked': 'D1' },
  'own lapsed': { 'eligible, unrivalled': 'T2', 'eligible, outranked': 'D2', 'ineligible, unrivalled': 'D1', 'ineligible, outranked': 'D1' },
  'other live': { 'eligible, unrivalled': 'F', 'eligible, outranked': 'F', 'ineligible, unrivalled': 'F', 'ineligible, outranked': 'F' },
  'other at end': { 'eligible, unrivalled': 'T2', 'eligible, outranked': 'D2', 'ineligible, unrivalled': 'D1', 'ineligible, outranked': 'D1' },
  'other lapsed': { 'eligible, unrivalled': 'T2', 'eligible, outranked': 'D2', 'ineligible, unrivalled': 'D1', 'ineligible, outranked': 'D1' },
};

const PRIORITIES = [undefined, -1, 0, 2] as const;
const ELIGIBLES = [undefined, true, false] as const;
const RIVALS = [null, -2, -1, 0, 1, 2, 3] as const;

interface Combination {
  lease: LeaseCase;
  term: number;
  fields: { priority?: number; eligible?: boolean };
  standing: CallerStanding;
  /** The caller's effective priority and eligibility, worked out case by case below. */
  priority: number;
  eligible: boolean;
}

function* combinations(): Generator<Combination> {
  for (const lease of LEASE_CASES)
    for (const term of [0, 7])
      for (const registered of [false, true])
        for (const storedPriority of registered ? [-1, 0, 2] : [null])
          for (const storedEligible of registered ? [true, false] : [null])
            for (const rivalPriority of RIVALS)
              for (const priority of PRIORITIES)
                for (const eligible of ELIGIBLES) {
                  const fields = { ...(priority === undefined ? {} : { priority }), ...(eligible === undefined ? {} : { eligible }) };
                  // Given beats stored beats the defaults (0, true).
                  const effectivePriority = priority !== undefined ? priority : storedPriority !== null ? storedPriority : 0;
                  const effectiveEligible = eligible !== undefined ? eligible : storedEligible !== null ? storedEligible : true;
                  yield {
                    lease,
                    term,
                    fields,
                    standing: { registered, storedPriority, storedEligible, rivalPriority },
                    priority: effectivePriority,
                    eligible: effectiveEligible,
                  };
                }
}

function rankOf(c: Combination): Rank {
  const outranked = c.standing.rivalPriority !== null && c.standing.rivalPriority > c.priority;
  return `${c.eligible ? 'eligible' : 'ineligible'}, ${outranked ? 'outranked' : 'unrivalled'}` as Rank;
}

describe('decideElect: every combination', () => {
  const all = [...combinations()];

  test('covers the domains (each lease case, rank and branch occurs)', () => {
    expect(all.length).toBe(LEASE_CASES.length * 2 * (1 + 3 * 2) * RIVALS.length * PRIORITIES.length * ELIGIBLES.length);
    const seen = new Set(all.map((c) => `${c.lease}/${rankOf(c)}`));
    expect(seen.size).toBe(LEASE_CASES.length * 4);
    const branches = new Set(all.map((c) => decideElect({ row: rowOf(c.lease, c.term), now: NOW, candidateId: ME, standing: c.standing, fields: c.fields, expireMs: EXPIRE }).branch));
    expect([...branches].sort()).toEqual(['D1', 'D2', 'F', 'H', 'R', 'T0', 'T1', 'T2']);
  });

  test('agrees with the hand-written table', () => {
    const wrong: string[] = [];
    for (const c of all) {
      const verdict = decideElect({ row: rowOf(c.lease, c.term), now: NOW, candidateId: ME, standing: c.standing, fields: c.fields, expireMs: EXPIRE });
      const expected = TABLE[c.lease][rankOf(c)];
      if (verdict.branch !== expected) wrong.push(`${JSON.stringify(c)}: ${verdict.branch}, expected ${expected}`);
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  test('keeps the invariants', () => {
    const broken: string[] = [];
    const check = (ok: boolean, what: string, c: Combination) => {
      if (!ok) broken.push(`${what}: ${JSON.stringify(c)}`);
    };
    for (const c of all) {
      const row = rowOf(c.lease, c.term);
      const v = decideElect({ row, now: NOW, candidateId: ME, standing: c.standing, fields: c.fields, expireMs: EXPIRE });
      const live = LIVE[c.lease];
      const outranked = c.standing.rivalPriority !== null && c.standing.rivalPriority > c.priority;
      check(isLive(row, NOW) === live, 'liveness: a lease ending at or before now is not live', c);
      // Never preempts another's live lease.
      if (live && row!.leaderId === OTHER) check(!v.takes && v.leaderId === OTHER && v.term === row!.term, 'preempted a live lease', c);
      // The term goes up by one exactly when the caller acquires; it never goes down.
      const acquires = v.takes && !v.renewing;
      // A namespace without a row starts at term 0.
      const before = row === undefined ? 0 : c.term;
      check(v.term === (acquires ? before + 1 : before), 'term +1 only on take', c);
      check(!v.renewing || v.term === before, 'renewal keeps the term', c);
      check(v.renewing === (live && row!.leaderId === ME), 'renews exactly its own live lease', c);
      check(!acquires || c.eligible, 'an ineligible caller acquired', c);
      check(!acquires || !outranked, 'an outranked caller acquired', c);
      check(!(!live && c.eligible && outranked) || (!v.takes && v.leaderId === null), 'outranked must defer', c);
      check(!(!live && c.eligible && !outranked) || acquires, 'an eligible unrivalled caller must take a lease that is not live', c);
      check(!v.handOver || v.renewing, 'handOver only on renewal', c);
      check(v.handOver === (v.renewing && (!c.eligible || outranked)), 'handOver exactly when ineligible or outranked', c);
      check(v.takes === (v.leaderId === ME), 'leads exactly when it takes', c);
      check(v.takes ? v.leaseExpiresAt === NOW + EXPIRE : v.leaseExpiresAt === undefined, 'lease = now + expire when taken or renewed', c);
      // A lapsed holder's term is closed at its lease end exactly when someone acquires after it.
      const lapsedHolder = row !== undefined && row.leaderId !== null && !live;
      if (acquires && lapsedHolder) check(v.closes?.term === c.term && v.closes.endedAt === row.leaseExpiresAt, 'lapsed term closed at its lease end', c);
      else check(v.closes === undefined, 'closes a term only on takeover of a lapsed lease', c);
      check(v.createsRow === (row === undefined), 'creates the row only when missing', c);
      check(v.wasRegistered === c.standing.registered, 'wasRegistered', c);
      if (!v.takes) check(v.leaderId === (live ? row!.leaderId : null), 'a follower reports the live holder or nobody', c);
      // The store's decide() is this decision on the database-judged liveness.
      const judged = decide({ leaderId: row?.leaderId ?? null, live }, ME, c.standing, c.fields);
      check(judged.renewing === v.renewing && judged.takes === v.takes && judged.handOver === v.handOver, 'store decide() delegates', c);
    }
    expect(broken.slice(0, 5)).toEqual([]);
  });
});

describe('decideVacate and decideFence: every combination', () => {
  const reasons = ['resigned', 'handed-over', 'unregistered'] as const;

  test('vacate: the hand-written table', () => {
    // lease case → [branch, result, vacates, closing reason ('reason' = the call's)]
    const table: Record<LeaseCase, [string, boolean, boolean, string | null]> = {
      'no row': ['V0', false, false, null],
      vacant: ['V0', false, false, null],
      'own live': ['V1', true, true, 'reason'],
      'own at end': ['V2', false, true, 'expired'],
      'own lapsed': ['V2', false, true, 'expired'],
      'other live': ['V0', false, false, null],
      'other at end': ['V0', false, false, null],
      'other lapsed': ['V0', false, false, null],
    };
    for (const lease of LEASE_CASES)
      for (const term of [0, 7])
        for (const reason of reasons) {
          const row = rowOf(lease, term);
          const v = decideVacate(row, NOW, ME, reason);
          const [branch, result, vacates, closing] = table[lease];
          expect({ lease, branch: v.branch, result: v.result, vacates: v.vacates }).toEqual({ lease, branch, result, vacates });
          if (closing === null) expect(v.closes).toBeUndefined();
          else
            expect(v.closes).toEqual({
              term,
              reason: closing === 'reason' ? reason : 'expired',
              endedAt: closing === 'reason' ? NOW : row!.leaseExpiresAt,
            });
        }
  });

  test('fence: the hand-written table', () => {
    // lease case × expected term (none, the row's, another) → [pass, leaderId, term ('row' = the row's)]
    type Expect = [boolean, string | null, 'row' | null];
    const table: Record<LeaseCase, [Expect, Expect, Expect]> = {
      'no row': [
        [false, null, null],
        [false, null, null],
        [false, null, null],
      ],
      vacant: [
        [false, null, 'row'],
        [false, null, 'row'],
        [false, null, 'row'],
      ],
      'own live': [
        [true, ME, 'row'],
        [true, ME, 'row'],
        [false, ME, 'row'],
      ],
      'own at end': [
        [false, null, 'row'],
        [false, null, 'row'],
        [false, null, 'row'],
      ],
      'own lapsed': [
        [false, null, 'row'],
        [false, null, 'row'],
        [false, null, 'row'],
      ],
      'other live': [
        [false, OTHER, 'row'],
        [false, OTHER, 'row'],
        [false, OTHER, 'row'],
      ],
      'other at end': [
        [false, null, 'row'],
        [false, null, 'row'],
        [false, null, 'row'],
      ],
      'other lapsed': [
        [false, null, 'row'],
        [false, null, 'row'],
        [false, null, 'row'],
      ],
    };
    for (const lease of LEASE_CASES)
      for (const term of [0, 7]) {
        const expectations = table[lease];
        [undefined, term, term + 1].forEach((given, i) => {
          const v = decideFence(rowOf(lease, term), NOW, ME, given);
          const [pass, leaderId, rowTerm] = expectations[i]!;
          expect({ lease, given, pass: v.pass, leaderId: v.leaderId, term: v.term }).toEqual({ lease, given, pass, leaderId, term: rowTerm === 'row' ? term : null });
        });
      }
  });
});
