/**
 * `LeadingTerms`: when a MariaDB leader's one-statement renewal is worth sending. Only the path
 * depends on it (the statement checks everything again at the database clock), so these cases
 * pin down the one thing it decides: no statement that could only fail, none withheld that could
 * renew.
 */
import { LeadingTerms, SeenOutcome } from '../../dist/src/election/leading-terms';

function outcome(ns: string, leaderId: string | null, term: number, isLeader: boolean): SeenOutcome {
  return { ns, leaderId, term, isLeader };
}

describe('LeadingTerms', () => {
  test('offers the term a caller last led under, until half a lease after the call that saw it began', () => {
    const terms = new LeadingTerms();
    expect(terms.renewable('n', 'a', 10, 0)).toBeUndefined();
    terms.observe(outcome('n', 'a', 7, true), 1_000);
    expect(terms.renewable('n', 'a', 10, 1_000)).toBe(7);
    expect(terms.renewable('n', 'a', 10, 5_999)).toBe(7);
    expect(terms.renewable('n', 'a', 10, 6_000)).toBeUndefined();
    expect(terms.renewable('n', 'b', 10, 1_000)).toBeUndefined();
    expect(terms.renewable('other', 'a', 10, 1_000)).toBeUndefined();
    // A shorter lease at the next call: its own half counts.
    expect(terms.renewable('n', 'a', 2, 2_001)).toBeUndefined();
  });

  test('a follower of the same leader and term keeps it; any other outcome forgets it', () => {
    const terms = new LeadingTerms();
    terms.observe(outcome('n', 'a', 7, true), 0);
    terms.observe(outcome('n', 'a', 7, false), 100);
    expect(terms.renewable('n', 'a', 10, 200)).toBe(7);
    terms.observe(outcome('n', 'a', 8, false), 300);
    expect(terms.renewable('n', 'a', 10, 400)).toBeUndefined();

    terms.observe(outcome('n', 'a', 9, true), 500);
    terms.observe(outcome('n', null, 9, false), 600);
    expect(terms.renewable('n', 'a', 10, 700)).toBeUndefined();

    terms.observe(outcome('n', 'a', 10, true), 800);
    terms.observe(outcome('n', 'b', 11, true), 900);
    expect(terms.renewable('n', 'a', 10, 1_000)).toBeUndefined();
    expect(terms.renewable('n', 'b', 10, 1_000)).toBe(11);
    terms.forget('n');
    expect(terms.renewable('n', 'b', 10, 1_000)).toBeUndefined();
  });
});
