import { compareNs, fairShare } from '../../dist/src/election/group-store';

/**
 * The fair-share rule ranks members in byte order, as the SQL copies do (PostgreSQL `COLLATE "C"`,
 * SQLite's BINARY collation): U+FFFD (UTF-8 EF BF BD) before U+1F600 (F0 9F 98 80), although in
 * UTF-16 code units (`Array#sort`) the surrogate pair D83D DE00 comes first.
 */
describe('fairShare', () => {
  const replacement = '\uFFFD';
  const emoji = '\u{1F600}';

  it('ranks members by bytes, not UTF-16 code units', () => {
    expect([emoji, replacement].sort()).toEqual([emoji, replacement]); // what it must not follow
    expect(compareNs(replacement, emoji)).toBeLessThan(0);
    expect(fairShare(1, [emoji, replacement], replacement)).toBe(1);
    expect(fairShare(1, [emoji, replacement], emoji)).toBe(0);
  });

  it('gives ⌊n/k⌋ each and one more to the first n mod k members; 0 to a non-member', () => {
    const members = ['c', 'a', 'b'];
    expect(members.map((m) => fairShare(7, members, m))).toEqual([2, 3, 2]);
    expect(fairShare(7, members, 'z')).toBe(0);
    expect(['a', 'b', 'c'].reduce((sum, m) => sum + fairShare(7, members, m), 0)).toBe(7);
  });
});
