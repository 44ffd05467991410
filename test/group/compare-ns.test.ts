import fc from 'fast-check';
import { compareNs } from '../../dist/src/election/group-store';

/**
 * compareNs orders namespaces as the tables' binary collations do: by UTF-8 bytes. It compares
 * UTF-16 code units without encoding (a group tick sorts every namespace with it), so it is held
 * to Buffer.compare of the encoded strings, the order it stands for.
 */
const bytesOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('compareNs', () => {
  it('orders as the UTF-8 bytes do, astral code points and U+E000–U+FFFF included', () => {
    const edges = ['', 'a', 'ab', '\uD7FF', '\uE000', '\uFFFD', '\uFFFF', '\u{10000}', '\u{1F600}', '\u{10FFFF}', 'é', 'z\u{1F600}', 'z\uFFFD'];
    for (const a of edges) for (const b of edges) expect([a, b, Math.sign(compareNs(a, b))]).toEqual([a, b, Math.sign(bytesOrder(a, b))]);
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }), (a, b) => {
        expect(Math.sign(compareNs(a, b))).toBe(Math.sign(bytesOrder(a, b)));
        expect(Math.sign(compareNs(a + 'x', a + b))).toBe(Math.sign(bytesOrder(a + 'x', a + b)));
      }),
      { numRuns: 2_000 },
    );
  });
});
