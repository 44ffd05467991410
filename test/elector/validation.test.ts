/**
 * The constructor validates its options (ValidationError naming the option) and
 * touches no database.
 */
import { DEFAULT_EXPIRE_SECONDS, DEFAULT_STOP_TIMEOUT_MS, LeaderElector, LeaderElectorGroup, MAX_INTERVAL_MS, MIN_EXPIRE_SECONDS, ValidationError } from 'gemstone-utils';

function rejection(options: unknown): ValidationError {
  try {
    new LeaderElector(options as never);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error(`accepted ${JSON.stringify(options)}`);
}

describe('LeaderElector construction', () => {
  test('defaults: ns "default", a random lower-case UUID, expireSeconds 60, intervalMs = lease / 3', () => {
    const a = new LeaderElector();
    const b = new LeaderElector();
    expect(a.ns).toBe('default');
    expect(a.candidateId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(a.candidateId).not.toBe(b.candidateId);
    expect(a.expireSeconds).toBe(DEFAULT_EXPIRE_SECONDS);
    expect(a.intervalMs).toBe((DEFAULT_EXPIRE_SECONDS * 1000) / 3);
    expect(new LeaderElector({ expireSeconds: 3 }).intervalMs).toBe(1000);
    expect(new LeaderElector({ expireSeconds: 31_536_000 }).intervalMs).toBe(MAX_INTERVAL_MS);
    expect(a.isLeader).toBe(false);
    expect(a.term).toBeNull();
    expect(a.leaderId).toBeNull();
  });

  test('stopTimeoutMs: default min(lease, DEFAULT_STOP_TIMEOUT_MS), else a finite number > 0', () => {
    expect(new LeaderElector().stopTimeoutMs).toBe(DEFAULT_STOP_TIMEOUT_MS);
    expect(new LeaderElector({ expireSeconds: 2 }).stopTimeoutMs).toBe(2_000);
    expect(new LeaderElector({ stopTimeoutMs: 250 }).stopTimeoutMs).toBe(250);
    for (const bad of [0, -1, NaN, Infinity, 2 ** 31, '100', null]) expect(rejection({ stopTimeoutMs: bad }).parameter).toBe('options.stopTimeoutMs');
  });

  test('listen: true, false or { url } with a postgres:// URL', () => {
    for (const good of [true, false, { url: 'postgres://app@db:5432/app' }, { url: 'postgresql://db/app' }]) {
      expect(() => new LeaderElector({ listen: good })).not.toThrow();
    }
    for (const bad of [{}, { url: '' }, { url: 'mysql://db/app' }, { url: 42 }]) expect(rejection({ listen: bad }).parameter).toBe('options.listen.url');
    expect(rejection({ listen: { url: 'postgres://db/app', host: 'x' } }).parameter).toBe('options.listen.host');
    for (const bad of ['yes', 1, null, []]) expect(rejection({ listen: bad }).parameter).toBe('options.listen');
  });

  test('candidateId is any UUID, kept lower-case', () => {
    const id = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11';
    expect(new LeaderElector({ candidateId: id }).candidateId).toBe(id.toLowerCase());
    for (const bad of ['', 'worker-1', 42, null]) expect(rejection({ candidateId: bad }).parameter).toBe('options.candidateId');
  });

  test('intervalMs must be > 0 and < expireSeconds * 1000 / 2', () => {
    expect(new LeaderElector({ expireSeconds: 2, intervalMs: 999 }).intervalMs).toBe(999);
    for (const bad of [1000, 1500, 0, -1, Number.NaN, Number.POSITIVE_INFINITY, '300']) {
      const error = rejection({ expireSeconds: 2, intervalMs: bad });
      expect(error.parameter).toBe('options.intervalMs');
    }
    expect(rejection({ expireSeconds: 2, intervalMs: 1000 }).message).toMatch(/< expireSeconds \* 1000 \/ 2 = 1000 ms/);
    // the default lease (60 s) applies when only intervalMs is given
    expect(rejection({ intervalMs: 30_000 }).parameter).toBe('options.intervalMs');
    expect(new LeaderElector({ intervalMs: 29_999 }).intervalMs).toBe(29_999);
  });

  test('a value String() cannot convert (a property test found it) still gets its ValidationError', () => {
    const unprintable = { toString: {} };
    for (const key of ['intervalMs', 'stopTimeoutMs', 'clockSkewWarningSeconds']) {
      const error = rejection({ [key]: unprintable });
      expect(error.parameter).toBe(`options.${key}`);
      expect(error.message).toContain('(got an object)');
    }
    expect(rejection({ intervalMs: Symbol('x') }).message).toContain('(got Symbol(x))');
  });

  test('expireSeconds, ns, callbacks, clock, logger, handleSignals, dataSource and unknown keys are checked', () => {
    for (const bad of [0, 0.001, 0.099, -1, Number.NaN, 31_536_001, '60']) expect(rejection({ expireSeconds: bad }).parameter).toBe('options.expireSeconds');
    for (const bad of ['', 'x'.repeat(256), 7, '\u0000']) expect(rejection({ ns: bad }).parameter).toBe('options.ns');
    for (const name of ['onStartedLeading', 'onStoppedLeading', 'onNewLeader', 'clock']) {
      expect(rejection({ [name]: 'not a function' }).parameter).toBe(`options.${name}`);
    }
    expect(rejection({ logger: { log: () => undefined } }).parameter).toBe('options.logger');
    expect(rejection({ handleSignals: 'yes' }).parameter).toBe('options.handleSignals');
    expect(rejection({ dataSource: { url: 'postgres://x' } }).parameter).toBe('options.dataSource');
    expect(rejection({ namespace: 'typo' }).parameter).toBe('options.namespace');
    expect(rejection('options').parameter).toBe('options');
  });

  test('expireSeconds below MIN_EXPIRE_SECONDS (0.1) is refused by the elector and the group alike, naming the option', () => {
    // 1 ms: an elector ticking every third of a millisecond, whose every grant has expired by the time it answers.
    expect(rejection({ expireSeconds: 0.001 }).message).toMatch(/>= 0\.1 .*\(got 0\.001\)/);
    expect(() => new LeaderElectorGroup({ namespaces: ['a'], expireSeconds: 0.001 })).toThrow(
      expect.objectContaining({ name: 'ValidationError', parameter: 'options.expireSeconds' }),
    );
    expect(new LeaderElector({ expireSeconds: MIN_EXPIRE_SECONDS }).intervalMs).toBeCloseTo(100 / 3);
    expect(new LeaderElectorGroup({ namespaces: ['a'], expireSeconds: MIN_EXPIRE_SECONDS }).expireSeconds).toBe(0.1);
  });

  test('start() without a DataSource and before initDb rejects with NotInitializedError and leaves nothing running', async () => {
    const elector = new LeaderElector();
    await expect(elector.start()).rejects.toMatchObject({ name: 'NotInitializedError' });
    expect(elector.running).toBe(false);
    await expect(elector.stop()).resolves.toBeUndefined();
  });

  test('runIfLeader checks its argument and does not run fn on a non-leader', async () => {
    const elector = new LeaderElector();
    let ran = false;
    await expect(
      elector.runIfLeader(() => {
        ran = true;
      }),
    ).resolves.toBeUndefined();
    expect(ran).toBe(false);
    await expect(elector.runIfLeader('nope' as never)).rejects.toMatchObject({ name: 'ValidationError', parameter: 'fn' });
  });
});
