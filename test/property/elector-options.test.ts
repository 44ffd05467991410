/**
 * Hostile options for the LeaderElector constructor: valid options construct an
 * elector with the given (or default) values; anything else is a ValidationError naming the
 * option. The constructor touches no database, so nothing can have been written either way.
 */
import fc from 'fast-check';
import type { DataSource } from 'typeorm';
import { DEFAULT_EXPIRE_SECONDS, DEFAULT_NS, LeaderElector } from 'gemstone-utils';
import { describeEachDatabase, snapshot } from '../support/databases';
import { candidateIdArb, expectVerdict, expireArb, garbage, invalidOptions, isValidCandidateId, isValidExpire, isValidNs, nsArb, optionsArb, RUNS } from './hostile';

const intervalArb = fc.oneof(
  fc.double({ min: 1e-3, max: 40_000 }),
  fc.integer({ min: 1, max: 40_000 }),
  fc.constantFrom<unknown>(0, -1, NaN, Infinity, 1e12, '100', 100n),
  garbage,
);
const functionArb = fc.oneof(fc.constant(() => undefined), fc.constant(async () => undefined), garbage);
const loggerArb = fc.oneof(fc.constant({ error: () => undefined }), fc.constant(console), fc.constant({ warn: () => undefined }), garbage);
const isFunction = (value: unknown) => typeof value === 'function';

describeEachDatabase(
  'LeaderElector hostile options',
  (db) => {
    let ds: DataSource;
    beforeAll(async () => {
      ds = await db.connect();
    });

    test('the constructor accepts valid options and names the bad one otherwise', async () => {
      const before = await snapshot(ds);
      await fc.assert(
        fc.asyncProperty(
          fc.boolean(),
          optionsArb({
            ns: nsArb,
            candidateId: candidateIdArb,
            expireSeconds: expireArb,
            intervalMs: intervalArb,
            onStartedLeading: functionArb,
            onStoppedLeading: functionArb,
            onNewLeader: functionArb,
            clock: functionArb,
            logger: loggerArb,
            handleSignals: fc.oneof(fc.boolean(), garbage),
            dataSource: garbage,
          }),
          async (withDataSource, generated) => {
            const options =
              withDataSource && typeof generated === 'object' && generated !== null && !Array.isArray(generated)
                ? { ...generated, dataSource: ds }
                : generated;
            const o = (typeof options === 'object' && options !== null ? options : {}) as Record<string, unknown>;
            const expireSeconds = (o.expireSeconds ?? DEFAULT_EXPIRE_SECONDS) as number;
            const invalid = invalidOptions(options, {
              dataSource: (v) => v === ds,
              ns: isValidNs,
              candidateId: isValidCandidateId,
              expireSeconds: isValidExpire,
              intervalMs: (v) =>
                typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= 1_900_000_000 && (!isValidExpire(expireSeconds) || v < (expireSeconds * 1000) / 2),
              onStartedLeading: isFunction,
              onStoppedLeading: isFunction,
              onNewLeader: isFunction,
              clock: isFunction,
              logger: (v) => typeof v === 'object' && v !== null && typeof (v as { error?: unknown }).error === 'function',
              handleSignals: (v) => typeof v === 'boolean',
            });
            const outcome = await expectVerdict(invalid, () => new LeaderElector(options as never));
            if (!outcome.ok) return;
            const elector = outcome.value;
            expect(elector.ns).toBe(o.ns ?? DEFAULT_NS);
            if (o.candidateId !== undefined) expect(elector.candidateId).toBe(String(o.candidateId).toLowerCase());
            expect(isValidCandidateId(elector.candidateId)).toBe(true);
            expect(elector.isLeader).toBe(false);
            expect(elector.term).toBeNull();
            expect(elector.leaderId).toBeNull();
          },
        ),
        { numRuns: RUNS * 3 },
      );
      expect(await snapshot(ds)).toBe(before);
    });

    test('runIfLeader refuses anything but a function as fn', async () => {
      const elector = new LeaderElector({ dataSource: ds });
      await fc.assert(
        fc.asyncProperty(garbage, async (fn) => {
          await expectVerdict(typeof fn === 'function' ? [] : ['fn'], () => elector.runIfLeader(fn as never));
        }),
        { numRuns: RUNS },
      );
    });
  },
  { kinds: ['postgres', 'sqlite'] },
);
