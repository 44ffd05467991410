/**
 * Namespaces are data, never SQL: quotes and metacharacters, 255-character and multi-byte names
 * are stored and read back exactly, on every database; names that differ only in case, trailing
 * space or Unicode normalization are different namespaces.
 */
import fc from 'fast-check';
import type { DataSource } from 'typeorm';
import { ElectionService, LEADER_TABLE, CANDIDATE_TABLE, MAX_NS_LENGTH } from 'gemstone-utils';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { RUNS, SQL_HOSTILE, UNICODE_NAMES } from './hostile';

/** Well-formed, NUL-free, 1..255 code points: what the library promises to store exactly (docs/databases.md). */
const storableNs = fc
  .oneof(
    fc.constantFrom(...SQL_HOSTILE, ...UNICODE_NAMES),
    fc.string({ unit: 'binary', minLength: 1, maxLength: MAX_NS_LENGTH }),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }),
    fc.constantFrom('x'.repeat(MAX_NS_LENGTH), '😀'.repeat(MAX_NS_LENGTH), '工'.repeat(MAX_NS_LENGTH), 'e\u0301'.repeat(127)),
  )
  .filter((s) => !s.includes('\u0000') && [...s].length <= MAX_NS_LENGTH && s.isWellFormed());

describeEachDatabase('namespaces round-trip exactly', (db) => {
  let ds: DataSource;
  let svc: ElectionService;
  const tables = () => query<{ n: number | string }>(ds, `SELECT COUNT(*) AS n FROM ${LEADER_TABLE}`);

  beforeAll(async () => {
    ds = await db.connect();
    svc = new ElectionService(ds, { expireSeconds: 60 });
  });

  test('any storable name: the leader row, getLeader and listCandidates give back the same string', async () => {
    const seen = new Map<string, string>(); // ns -> its leader
    await fc.assert(
      fc.asyncProperty(storableNs, async (ns) => {
        const id = seen.get(ns) ?? uuid();
        expect(await svc.elect(id, { ns })).toBe(id);
        seen.set(ns, id);
        expect((await svc.getLeader({ ns }))?.ns).toBe(ns);
        expect(await svc.listCandidates({ ns })).toEqual([id]);
        const rows = await query<{ ns: string; leader_id: string }>(ds, `SELECT ns, leader_id FROM ${LEADER_TABLE} WHERE ns = ?`, [ns]);
        expect(rows).toEqual([{ ns, leader_id: id }]);
        const candidates = await query<{ ns: string }>(ds, `SELECT ns FROM ${CANDIDATE_TABLE} WHERE candidate_id = ?`, [id]);
        expect(candidates).toEqual([{ ns }]);
      }),
      { numRuns: RUNS },
    );
    // Every distinct name got its own row: no two were merged by collation or truncation.
    expect(Number((await tables())[0]!.n)).toBe(seen.size);
    const stored = await query<{ ns: string }>(ds, `SELECT ns FROM ${LEADER_TABLE}`);
    expect(new Set(stored.map((r) => r.ns))).toEqual(new Set(seen.keys()));
  });

  test("SQL in a name is stored as text: the tables survive and hold the name verbatim", async () => {
    const ns = "x'; DROP TABLE gemstone_election_leader; --";
    const id = uuid();
    await svc.elect(id, { ns });
    await svc.registerCandidate(uuid(), { ns: '"; DELETE FROM gemstone_election_candidate; --' });
    expect((await svc.getLeader({ ns }))?.leaderId).toBe(id);
    const [row] = await query<{ ns: string }>(ds, `SELECT ns FROM ${LEADER_TABLE} WHERE leader_id = ?`, [id]);
    expect(row!.ns).toBe(ns);
    expect((await query(ds, `SELECT * FROM ${CANDIDATE_TABLE}`)).length).toBeGreaterThan(1);
  });

  test.each([
    ['case and trailing space', ['Jobs', 'jobs', 'jobs ', 'JOBS', ' jobs']],
    ['Unicode normalization (NFC vs NFD) and width', ['\u00e9', 'e\u0301', 'Ａ', 'A']],
    ['emoji and their variation selectors', ['❤', '❤️', '👍', '👍🏽']],
  ])('%s: every variant is its own namespace', async (_label, variants) => {
    // A unique prefix keeps the variants apart from other tests; their ends stay as given.
    const prefix = `${uuid().slice(0, 8)}|`;
    const distinct = variants.map((v) => `${prefix}${v}`);
    const leaders = distinct.map(() => uuid());
    for (const [i, ns] of distinct.entries()) expect(await svc.elect(leaders[i]!, { ns })).toBe(leaders[i]);
    for (const [i, ns] of distinct.entries()) {
      expect((await svc.getLeader({ ns }))).toMatchObject({ ns, leaderId: leaders[i], term: 1 });
      expect(await svc.listCandidates({ ns })).toEqual([leaders[i]]);
    }
  });

  test('a 255-character multi-byte name fits; 256 characters are refused before any statement', async () => {
    const ns = '👩‍👩‍👧'.repeat(51); // 5 code points each: exactly 255 code points, 8 UTF-16 units each
    expect([...ns].length).toBe(MAX_NS_LENGTH);
    const id = uuid();
    await svc.elect(id, { ns });
    expect((await svc.getLeader({ ns }))?.ns).toBe(ns);
    const before = Number((await tables())[0]!.n);
    await expect(svc.elect(id, { ns: `${ns}x` })).rejects.toMatchObject({ name: 'ValidationError', parameter: 'options.ns' });
    expect(Number((await tables())[0]!.n)).toBe(before);
  });
});
