/**
 * Bad input gets a ValidationError naming the parameter, and changes nothing.
 * Also the module-level API before and after initDb.
 */
import type { DataSource } from 'typeorm';
import * as gemstone from 'gemstone-utils';
import { ElectionService, GemstoneError, MIN_EXPIRE_SECONDS, NotInitializedError, ValidationError } from 'gemstone-utils';
import { describeEachDatabase, snapshot, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

test('before initDb, the module-level functions and a default service throw NotInitializedError', async () => {
  await expect(gemstone.elect(uuid())).rejects.toBeInstanceOf(NotInitializedError);
  await expect(new ElectionService().listCandidates()).rejects.toBeInstanceOf(NotInitializedError);
  expect(() => gemstone.getDataSource()).toThrow(NotInitializedError);
  const error = await gemstone.isLeader(uuid()).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(GemstoneError);
  expect((error as Error).name).toBe('NotInitializedError');
  expect((error as Error).message).toMatch(/initDb/);
});

test('ValidationError is a GemstoneError with a name and the parameter', () => {
  const error = new ValidationError('options.ns', 'must not be empty');
  expect(error).toBeInstanceOf(Error);
  expect(error).toBeInstanceOf(GemstoneError);
  expect(error.name).toBe('ValidationError');
  expect(error.parameter).toBe('options.ns');
  expect(error.message).toBe('options.ns must not be empty');
});

describeEachDatabase('input validation', (db) => {
  let ds: DataSource;
  let svc: ElectionService;
  const good = uuid();

  beforeAll(async () => {
    ds = await db.connect();
    svc = new ElectionService(ds);
    // Some state, so "nothing changed" is a meaningful comparison.
    await svc.elect(good, { ns: 'validation' });
  });

  async function expectRejected(parameter: string, call: () => Promise<unknown> | unknown) {
    const before = await snapshot(ds);
    let error: unknown;
    try {
      await call();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).parameter).toBe(parameter);
    expect((error as Error).message.startsWith(parameter)).toBe(true);
    expect(await snapshot(ds)).toBe(before);
  }

  const badIds: unknown[] = [undefined, null, '', 'not-a-uuid', 42, {}, [], `${uuid()}x`, ` ${uuid()}`, uuid().replace(/-/g, ''), 'gggggggg-gggg-gggg-gggg-gggggggggggg'];
  const byId: Array<[string, (id: never) => Promise<unknown>]> = [
    ['registerCandidate', (id) => svc.registerCandidate(id, { ns: 'validation' })],
    ['heartbeat', (id) => svc.heartbeat(id, { ns: 'validation' })],
    ['elect', (id) => svc.elect(id, { ns: 'validation' })],
    ['isLeader', (id) => svc.isLeader(id, { ns: 'validation' })],
    ['unregisterCandidate', (id) => svc.unregisterCandidate(id, { ns: 'validation' })],
    ['resign', (id) => svc.resign(id, { ns: 'validation' })],
    ['assertLeader', (id) => ds.transaction((session) => svc.assertLeader(id, { ns: 'validation', session }))],
  ];

  test.each(byId)('%s: candidateId must be a UUID string', async (_name, call) => {
    for (const bad of badIds) await expectRejected('candidateId', () => call(bad as never));
  });

  const badNs: unknown[] = ['', 'x'.repeat(256), '😀'.repeat(256), 42, null, {}, ['a'], 'a\u0000b', 'lone \ud800 surrogate'];
  const byNs: Array<[string, (options: never) => Promise<unknown>]> = [
    ['registerCandidate', (o) => svc.registerCandidate(good, o)],
    ['heartbeat', (o) => svc.heartbeat(good, o)],
    ['elect', (o) => svc.elect(good, o)],
    ['isLeader', (o) => svc.isLeader(good, o)],
    ['listCandidates', (o) => svc.listCandidates(o)],
    ['unregisterCandidate', (o) => svc.unregisterCandidate(good, o)],
    ['getLeader', (o) => svc.getLeader(o)],
    ['resign', (o) => svc.resign(good, o)],
  ];

  test.each(byNs)('%s: ns must be a non-empty string of at most 255 characters; options must be an object of known keys', async (_name, call) => {
    for (const bad of badNs) await expectRejected('options.ns', () => call({ ns: bad } as never));
    for (const bad of ['default', 42, ['ns'], true]) await expectRejected('options', () => call(bad as never));
    await expectRejected('options.namespace', () => call({ namespace: 'x' } as never));
    await expectRejected('options.session', () => call({ session: 'not a session' } as never));
  });

  test('the longest valid namespaces are accepted: 255 characters, 255 emoji', async () => {
    for (const ns of ['x'.repeat(255), '😀'.repeat(255)]) {
      const id = uuid();
      expect(await svc.elect(id, { ns })).toBe(id);
      expect(await svc.getLeader({ ns })).toMatchObject({ ns, leaderId: id });
    }
  });

  test('assertLeader: term must be a non-negative integer', async () => {
    for (const term of [-1, 1.5, '1', NaN, Infinity, null]) {
      await expectRejected('options.term', () => ds.transaction((session) => svc.assertLeader(good, { ns: 'validation', session, term: term as never })));
    }
  });

  test('expireSeconds: finite, >= 0.1, <= 31,536,000 — in the constructor and setExpire', async () => {
    // 0.001 and 0.099: leases that end before the statement granting them has answered.
    const bad: unknown[] = [0, 0.001, 0.099, -1, NaN, Infinity, -Infinity, '60', null, 31_536_001, {}];
    for (const value of bad) {
      await expectRejected('options.expireSeconds', () => new ElectionService(ds, { expireSeconds: value as never }));
      const service = new ElectionService(ds, { expireSeconds: 30 });
      await expectRejected('seconds', () => service.setExpire(value as never));
      expect(service.expireSeconds).toBe(30);
      await expectRejected('seconds', () => gemstone.setExpire(value as never));
    }
    expect(new ElectionService(ds, { expireSeconds: 31_536_000 }).expireSeconds).toBe(31_536_000);
    expect(new ElectionService(ds, { expireSeconds: 0.25 }).expireSeconds).toBe(0.25);
    expect(new ElectionService(ds, { expireSeconds: MIN_EXPIRE_SECONDS }).expireSeconds).toBe(0.1);
    // The message names the bound and why.
    expect(() => new ElectionService(ds, { expireSeconds: 0.001 })).toThrow(/>= 0\.1 .*\(got 0\.001\): a lease must outlive the statement that grants it/);
    await expectRejected('options.expire', () => new ElectionService(ds, { expire: 5 } as never));
    await expectRejected('dataSource', () => new ElectionService('postgres://x' as never));
  });

  test('module-level functions run on the latest initDb DataSource and share the default expiry', async () => {
    const ns = freshNs();
    const a = uuid();
    // db.connect() went through initDb, so the default DataSource is `ds` here.
    expect(gemstone.getDataSource()).toBe(ds);
    gemstone.setExpire(42);
    try {
      expect(gemstone.defaultElectionService.expireSeconds).toBe(42);
      await gemstone.registerCandidate(a, { ns });
      await gemstone.heartbeat(a, { ns });
      expect(await gemstone.elect(a, { ns })).toBe(a);
      expect(await gemstone.isLeader(a, { ns })).toBe(true);
      expect(await gemstone.listCandidates({ ns })).toEqual([a]);
      const info = await gemstone.getLeader({ ns });
      expect(info!.leaseExpiresAt.getTime() - info!.updatedAt.getTime()).toBeGreaterThanOrEqual(41_990);
      expect(info!.leaseExpiresAt.getTime() - info!.updatedAt.getTime()).toBeLessThanOrEqual(42_010);
      expect(await ds.transaction((session) => gemstone.assertLeader(a, { ns, session }))).toMatchObject({ term: 1 });
      expect(await gemstone.resign(a, { ns })).toBe(true);
      await gemstone.unregisterCandidate(a, { ns });
      expect(await gemstone.listCandidates({ ns })).toEqual([]);
    } finally {
      gemstone.setExpire(60);
    }
  });
});
