/**
 * `GemstoneDB.register` is idempotent; `entities` and `migrations` are frozen
 * copies, so changing them cannot change the registry. (Which imports register what is checked
 * from child processes in test/package/exports.test.ts.)
 */
import {
  ElectionCandidate,
  ElectionHistory,
  ElectionLeader,
  ElectionRun,
  GemstoneDB,
  GemstoneElectionIdentity1795392000000,
  GemstoneElectionRuns1796256000000,
  GemstoneElectionLeanHeartbeat1797120000000,
  GemstoneElectionTables1763683200000,
} from 'gemstone-utils';

type DbModule = typeof import('gemstone-utils/db');

/** A fresh copy of the package's modules: a registry no other test has registered anything on. */
function isolated<T>(work: (load: (specifier: 'gemstone-utils/db' | 'gemstone-utils/election') => unknown) => T): T {
  let result: T | undefined;
  jest.isolateModules(() => {
    result = work((specifier) => require(specifier));
  });
  return result as T;
}

class PluginEntity {}
class OtherPluginEntity {}
class PluginMigration {
  async up(): Promise<void> {}
  async down(): Promise<void> {}
}

describe('GemstoneDB', () => {
  test('lists the election entities and migrations once importing gemstone-utils registered them', () => {
    expect(GemstoneDB.entities).toEqual([ElectionCandidate, ElectionLeader, ElectionHistory, ElectionRun]);
    expect(GemstoneDB.migrations).toEqual([GemstoneElectionTables1763683200000, GemstoneElectionIdentity1795392000000, GemstoneElectionRuns1796256000000, GemstoneElectionLeanHeartbeat1797120000000]);
  });

  test('register is idempotent: the same entities and migrations again add nothing', () => {
    const [entities, migrations] = [GemstoneDB.entities, GemstoneDB.migrations];
    GemstoneDB.register({ entities: [ElectionCandidate, ElectionLeader], migrations: [GemstoneElectionTables1763683200000] });
    GemstoneDB.register({ entities: [ElectionLeader, ElectionLeader] });
    GemstoneDB.register({});
    expect(GemstoneDB.entities).toEqual(entities);
    expect(GemstoneDB.migrations).toEqual(migrations);
  });

  test('a plugin registering twice (e.g. imported through two paths) is listed once, in registration order', () => {
    isolated((load) => {
      const { GemstoneDB: registry } = load('gemstone-utils/db') as DbModule;
      expect(registry.entities).toEqual([]); // the db module alone registers nothing
      const plugin = { entities: [PluginEntity, OtherPluginEntity], migrations: [PluginMigration] };
      registry.register(plugin);
      registry.register(plugin);
      registry.register({ entities: [OtherPluginEntity] });
      expect(registry.entities).toEqual([PluginEntity, OtherPluginEntity]);
      expect(registry.migrations).toEqual([PluginMigration]);

      const election = load('gemstone-utils/election') as { ElectionCandidate: unknown; ElectionLeader: unknown; ElectionHistory: unknown; ElectionRun: unknown };
      expect(registry.entities).toEqual([PluginEntity, OtherPluginEntity, election.ElectionCandidate, election.ElectionLeader, election.ElectionHistory, election.ElectionRun]);
      expect(registry.migrations.map((m) => m.name)).toEqual(['PluginMigration', 'GemstoneElectionTables1763683200000', 'GemstoneElectionIdentity1795392000000', 'GemstoneElectionRuns1796256000000', 'GemstoneElectionLeanHeartbeat1797120000000']);
    });
  });

  test.each(['entities', 'migrations'] as const)('%s is frozen: changing it throws and leaves the registry as it was', (key) => {
    const list = GemstoneDB[key] as unknown[];
    const before = [...list];
    expect(Object.isFrozen(list)).toBe(true);
    const attempts: Array<() => unknown> = [
      () => list.push(PluginEntity),
      () => list.pop(),
      () => list.splice(0, 1),
      () => list.unshift(PluginEntity),
      () => list.fill(PluginEntity),
      () => (list.length = 0),
      () => (list[0] = PluginEntity),
      () => ((GemstoneDB as unknown as Record<string, unknown>)[key] = []),
    ];
    for (const attempt of attempts) expect(attempt).toThrow(TypeError);
    expect(GemstoneDB[key]).toEqual(before);
  });

  test('a copy the caller changes does not change the registry', () => {
    const entities = [...GemstoneDB.entities];
    entities.length = 0;
    expect(GemstoneDB.entities).toEqual([ElectionCandidate, ElectionLeader, ElectionHistory, ElectionRun]);
    expect(GemstoneDB.entities).not.toBe(GemstoneDB.entities); // a new copy each time, not a shared view
  });

  test('the registry object itself cannot be replaced or extended', () => {
    expect(Object.isFrozen(GemstoneDB)).toBe(true);
    expect(() => ((GemstoneDB as unknown as Record<string, unknown>).register = () => undefined)).toThrow(TypeError);
    expect(() => ((GemstoneDB as unknown as Record<string, unknown>).extra = 1)).toThrow(TypeError);
  });

  test('register with a bad argument is a ValidationError naming it, and registers nothing', () => {
    isolated((load) => {
      const { GemstoneDB: registry, ValidationError } = load('gemstone-utils/db') as DbModule;
      const bad: Array<[unknown, string]> = [
        [null, 'registration'],
        ['entities', 'registration'],
        [{ entities: PluginEntity }, 'registration.entities'],
        [{ entities: [PluginEntity, 'src/**/*.entity.ts'] }, 'registration.entities'],
        [{ migrations: [PluginMigration, null] }, 'registration.migrations'],
        [{ entities: [PluginEntity], installers: [{}] }, 'registration.installers'],
      ];
      for (const [registration, parameter] of bad) {
        let error: unknown;
        try {
          registry.register(registration as never);
        } catch (e) {
          error = e;
        }
        expect({ registration, error }).toEqual({ registration, error: expect.any(ValidationError) });
        expect((error as InstanceType<typeof ValidationError>).parameter).toBe(parameter);
      }
      expect(registry.entities).toEqual([]);
      expect(registry.migrations).toEqual([]);
    });
  });

  test('register() without an argument registers nothing and does not throw', () => {
    isolated((load) => {
      const { GemstoneDB: registry } = load('gemstone-utils/db') as DbModule;
      registry.register();
      expect(registry.entities).toEqual([]);
    });
  });
});
