/**
 * Hostile input for every ElectionService method and the module-level functions,
 * on every database: a call either works (valid input) or throws ValidationError naming a bad
 * parameter — and a rejected call leaves both tables exactly as they were.
 */
import fc from 'fast-check';
import type { DataSource, QueryRunner } from 'typeorm';
import * as election from 'gemstone-utils';
import { ElectionService, NotLeaderError } from 'gemstone-utils';
import { describeEachDatabase, snapshot, uuid } from '../support/databases';
import {
  candidateIdArb,
  expectVerdict,
  expireArb,
  garbage,
  invalidOptions,
  isValidCandidateId,
  isValidExpire,
  isValidNs,
  isValidTerm,
  nsArb,
  optionsArb,
  RUNS,
  termArb,
} from './hostile';

const WITH_CANDIDATE = ['registerCandidate', 'heartbeat', 'elect', 'isLeader', 'unregisterCandidate', 'resign'] as const;
const WITHOUT_CANDIDATE = ['listCandidates', 'getLeader'] as const;
type Api = Pick<ElectionService, (typeof WITH_CANDIDATE)[number] | (typeof WITHOUT_CANDIDATE)[number] | 'assertLeader'>;

/** The service methods, or the module-level functions bound to the default DataSource. */
function apiOf(target: 'service' | 'module', service: ElectionService): Api {
  if (target === 'service') return service;
  return election as unknown as Api;
}

describeEachDatabase('hostile input', (db) => {
  let ds: DataSource;
  let service: ElectionService;
  /** Real sessions are valid `session` values; everything else the generators produce is not. */
  const sessions = new Set<unknown>();
  const callChecks = {
    ns: isValidNs,
    session: (value: unknown) => value === undefined || sessions.has(value),
  };

  beforeAll(async () => {
    ds = await db.connect(); // also the default DataSource of the module-level functions
    service = new ElectionService(ds, { expireSeconds: 30 });
    election.setExpire(30);
  });
  afterAll(() => election.setExpire(election.DEFAULT_EXPIRE_SECONDS));

  /** Rejected ⇒ the tables are unchanged. */
  async function unchangedIfRejected(invalid: readonly string[], call: () => Promise<unknown>) {
    const before = await snapshot(ds);
    const outcome = await expectVerdict(invalid, call);
    if (!outcome.ok) expect(await snapshot(ds)).toBe(before);
    return outcome;
  }

  test.each(['service', 'module'] as const)('%s: methods taking a candidateId accept valid input and reject the rest', async (target) => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...WITH_CANDIDATE),
        candidateIdArb,
        optionsArb({ ns: nsArb, session: garbage }),
        async (method, candidateId, options) => {
          const invalid = [
            ...(isValidCandidateId(candidateId) ? [] : ['candidateId']),
            ...invalidOptions(options, callChecks),
          ];
          const call = () => (apiOf(target, service)[method] as (id: unknown, o: unknown) => Promise<unknown>)(candidateId, options);
          const outcome = await unchangedIfRejected(invalid, call);
          if (invalid.length === 0) expect(outcome).toMatchObject({ ok: true });
        },
      ),
      { numRuns: RUNS },
    );
  });

  test.each(['service', 'module'] as const)('%s: listCandidates and getLeader accept valid options and reject the rest', async (target) => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...WITHOUT_CANDIDATE), optionsArb({ ns: nsArb, session: garbage }), async (method, options) => {
        const invalid = invalidOptions(options, callChecks);
        const call = () => (apiOf(target, service)[method] as (o: unknown) => Promise<unknown>)(options);
        const outcome = await unchangedIfRejected(invalid, call);
        if (invalid.length === 0) expect(outcome).toMatchObject({ ok: true });
      }),
      { numRuns: RUNS },
    );
  });

  test('assertLeader: needs a session in a transaction and a valid term; otherwise ValidationError, nothing written', async () => {
    type SessionKind = 'none' | 'runner in transaction' | 'manager in transaction' | 'runner without transaction' | 'released runner';
    const kinds: SessionKind[] = ['none', 'runner in transaction', 'manager in transaction', 'runner without transaction', 'released runner'];
    await fc.assert(
      fc.asyncProperty(
        candidateIdArb,
        nsArb,
        termArb,
        fc.constantFrom(...kinds),
        fc.boolean(),
        async (candidateId, ns, term, kind, leads) => {
          // Sometimes make the candidate the leader first, so a valid call can also succeed.
          if (leads && isValidCandidateId(candidateId) && isValidNs(ns) && ns !== undefined) {
            await service.elect(candidateId as string, { ns: ns as string });
          }
          const runner: QueryRunner = ds.createQueryRunner();
          sessions.add(runner);
          sessions.add(runner.manager);
          try {
            if (kind.endsWith('in transaction')) await runner.startTransaction();
            if (kind === 'released runner') await runner.release();
            const session = kind === 'none' ? undefined : kind === 'manager in transaction' ? runner.manager : runner;
            const options: Record<string, unknown> = { session };
            if (ns !== undefined) options.ns = ns;
            if (term !== undefined) options.term = term;
            const invalid = [
              ...(isValidCandidateId(candidateId) ? [] : ['candidateId']),
              ...(isValidNs(ns) ? [] : ['options.ns']),
              ...(isValidTerm(term) ? [] : ['options.term']),
              ...(kind.endsWith('in transaction') ? [] : ['options.session']),
            ];
            const outcome = await unchangedIfRejected(invalid, () => service.assertLeader(candidateId as string, options));
            // Valid input: the caller leads (LeaderInfo) or it does not (NotLeaderError) — nothing else.
            if (invalid.length === 0 && !outcome.ok) expect(outcome.error).toBeInstanceOf(NotLeaderError);
            if (invalid.length === 0 && outcome.ok) expect(outcome.value).toMatchObject({ leaderId: (candidateId as string).toLowerCase() });
          } finally {
            if (runner.isTransactionActive) await runner.rollbackTransaction();
            if (!runner.isReleased) await runner.release();
            sessions.delete(runner);
            sessions.delete(runner.manager);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  test('a session of another DataSource is refused as options.session, nothing written', async () => {
    const other = await db.connect();
    const runner = other.createQueryRunner();
    try {
      await runner.startTransaction();
      const before = await snapshot(ds);
      await expect(service.elect(uuid(), { session: runner })).rejects.toMatchObject({
        name: 'ValidationError',
        parameter: 'options.session',
      });
      expect(await snapshot(ds)).toBe(before);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  });

  test('expireSeconds: constructor option, setExpire (method and module-level) accept [0.1 s, 1 year] and reject the rest', async () => {
    await fc.assert(
      fc.asyncProperty(expireArb, optionsArb({ expireSeconds: expireArb }), async (seconds, options) => {
        // constructor(dataSource, options)
        const ctorInvalid = invalidOptions(options, { expireSeconds: isValidExpire });
        const built = await expectVerdict(ctorInvalid, () => new ElectionService(ds, options as { expireSeconds?: number }));
        if (built.ok) {
          const given = (options as { expireSeconds?: number } | undefined)?.expireSeconds;
          expect(built.value.expireSeconds).toBe(given ?? election.DEFAULT_EXPIRE_SECONDS);
        }
        // setExpire(seconds): a rejected value leaves the old one in place.
        const svc = new ElectionService(ds, { expireSeconds: 42 });
        const set = await expectVerdict(isValidExpire(seconds) ? [] : ['seconds'], () => svc.setExpire(seconds as number));
        expect(svc.expireSeconds).toBe(set.ok ? seconds : 42);
        const moduleSet = await expectVerdict(isValidExpire(seconds) ? [] : ['seconds'], () => election.setExpire(seconds as number));
        expect(election.defaultElectionService.expireSeconds).toBe(moduleSet.ok ? seconds : 30);
        election.setExpire(30);
      }),
      { numRuns: RUNS * 3 },
    );
  });

  test('constructor: anything but a DataSource (or nothing) is refused as dataSource', async () => {
    await fc.assert(
      fc.asyncProperty(garbage, async (value) => {
        await expectVerdict(value === undefined ? [] : ['dataSource'], () => new ElectionService(value as DataSource));
      }),
      { numRuns: RUNS },
    );
  });
});
