// @ts-check
'use strict';
/**
 * A private Patroni cluster for tests, as teams run PostgreSQL in production: a single-node etcd
 * (the consensus store), N PostgreSQL members (default 3) of the machine's binaries managed by
 * Debian's `patroni`, and HAProxy in front routing to whichever member answers `GET /primary` on
 * its Patroni REST API with 200 (`on-marked-down shutdown-sessions`). The application connects to
 * HAProxy only. Every port is a free loopback port (`freePort`); every file lives in one
 * temporary directory. The machine's shared PostgreSQL is never touched.
 *
 * Each member reaches etcd through a TCP proxy of its own, in this process: `cutFromEtcd(name)`
 * holds that member's etcd traffic (a partition that only it sees) and `healEtcd(name)` lets it
 * through again. So nothing here may block this process's event loop while the cluster runs:
 * every operation is asynchronous.
 *
 * PostgreSQL refuses to run as root: when we are root, etcd, Patroni (and so PostgreSQL) and
 * HAProxy run as the `postgres` user. `stop()` kills everything and removes the directory;
 * processes still running when this process exits (a crashed test run) are killed by an exit hook.
 *
 *   node tools/patroni.js [sync|async]   starts a cluster, prints its addresses, stops it on Ctrl-C
 *                                        (PATRONI_DCS=etcd3: Patroni on etcd's v3 API)
 *   node tools/patroni.js pause-check [etcd|etcd3] [trials]
 *                                        a paused primary's Patroni against a synchronous commit
 *                                        on the member promoted meanwhile (see DEFAULT_DCS)
 */
const { execFile, execFileSync, spawn } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { promisify } = require('util');
const { freePort } = require('./private-db');
const { ChaosProxy } = require('./chaos/proxy');

const execFileAsync = promisify(execFile);

/** Patroni's timing in these tests (seconds): see DEFAULT_TIMING's comment. */
const DEFAULT_TIMING = Object.freeze({
  // The leader key lives `ttl` seconds after its last refresh; members act every `loop_wait`;
  // a DCS or PostgreSQL call is retried for `retry_timeout`. Patroni requires
  // ttl >= loop_wait + 2 * retry_timeout, so that a primary that cannot reach etcd demotes itself
  // (after retry_timeout) before its leader key expires and another member may promote. A third
  // of Patroni's defaults (30 / 10 / 10): failovers in seconds, on a busy 2-core machine.
  ttl: 10,
  loopWait: 2,
  retryTimeout: 3,
});

/**
 * HAProxy's health check: every `interMs`, marked down after `fall` failed checks (a check fails
 * on a non-200 answer or no answer within `timeoutMs`), up again after `rise` good ones. A
 * primary whose Patroni hangs is thus cut off after about fall × inter + timeout (2.5 s), well
 * before its leader key expires (ttl) and another member can be promoted.
 */
const DEFAULT_CHECK = Object.freeze({ interMs: 1000, fall: 2, rise: 1, timeoutMs: 1000 });

/**
 * Patroni's etcd client: `etcd` speaks etcd's v2 API (etcd 3.4 serves it with --enable-v2),
 * `etcd3` the v3 API. The default is v2 because Debian 12's Patroni 3.0.2 renews the leader key
 * unconditionally over v3: a primary whose Patroni was paused longer than `ttl` (SIGSTOP, a long
 * GC or VM pause) comes back, grants itself a new etcd lease and overwrites the leader key that
 * the promoted member holds — the old primary takes the cluster back and the new one is demoted
 * (fixed upstream in Patroni 3.0.3). Over v2 the renewal is compare-and-set on its own name and
 * fails, so the old primary demotes itself.
 */
const DEFAULT_DCS = 'etcd';

/** Single-quotes a value for /bin/sh. @param {string} value */
const sq = (value) => `'${value.replace(/'/g, `'\\''`)}'`;

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Pids this process started and has not stopped yet, and data directories whose postmaster to kill: for the exit hook. */
const running = new Set();
const dataDirs = new Set();
const roots = new Set();
let exitHookInstalled = false;
function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const dir of dataDirs) killPostmaster(dir, 'SIGKILL');
    for (const pid of running) signal(pid, 'SIGCONT') && signal(pid, 'SIGKILL');
    for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
  });
}

/** @param {number} pid @param {NodeJS.Signals | 0} sig @returns {boolean} whether it was delivered */
function signal(pid, sig) {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/** The postmaster's pid from its data directory, or undefined. @param {string} dataDir */
function postmasterPid(dataDir) {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 && signal(pid, 0) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** @param {string} dataDir @param {NodeJS.Signals} sig */
function killPostmaster(dataDir, sig) {
  const pid = postmasterPid(dataDir);
  if (pid !== undefined) signal(pid, sig);
  return pid;
}

/** The newest installed PostgreSQL's bin directory. */
function postgresBin() {
  const root = '/usr/lib/postgresql';
  const versions = fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  if (!versions.length) throw new Error(`no PostgreSQL binaries under ${root}`);
  return path.join(root, versions[0], 'bin');
}

/** @param {string} name */
function which(name) {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/bin', '/usr/sbin'])) {
    const candidate = path.join(dir, name);
    if (dir && fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * A GET or PATCH to a local HTTP endpoint: resolves { status, body } or rejects (no answer within
 * `timeoutMs`, refused).
 * @param {number} port @param {string} urlPath @param {{ method?: string, body?: unknown, timeoutMs?: number }} [options]
 * @returns {Promise<{ status: number, body: string }>}
 */
function request(port, urlPath, options = {}) {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: urlPath,
        method: options.method ?? 'GET',
        headers: payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {},
        timeout: options.timeoutMs ?? 2_000,
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from 127.0.0.1:${port}${urlPath}`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * @typedef {{ name: string, pgPort: number, restPort: number, dir: string, dataDir: string, config: string, log: string, etcdLink: any, patroniPid: number | undefined }} Member
 * @typedef {{ role: string, state: string, timeline?: number, xlog_location?: number }} MemberState
 * @typedef {{ leader: string | undefined, members: Record<string, MemberState>, syncStandby: string | undefined }} DcsState
 */

/**
 * Starts the cluster and waits until it is healthy (see `waitHealthy`), with a database `test`.
 * @param {{ dcs?: 'etcd' | 'etcd3', synchronous?: boolean, strict?: boolean, members?: number, ttl?: number, loopWait?: number, retryTimeout?: number, check?: Partial<typeof DEFAULT_CHECK>, startTimeoutMs?: number }} [options]
 */
async function startPatroni(options = {}) {
  const dcsApi = options.dcs ?? DEFAULT_DCS;
  const synchronous = options.synchronous ?? true;
  const strict = options.strict ?? synchronous;
  const count = options.members ?? 3;
  const timing = { ttl: options.ttl ?? DEFAULT_TIMING.ttl, loopWait: options.loopWait ?? DEFAULT_TIMING.loopWait, retryTimeout: options.retryTimeout ?? DEFAULT_TIMING.retryTimeout };
  const check = { ...DEFAULT_CHECK, ...options.check };
  const binaries = { patroni: which('patroni'), etcd: which('etcd'), haproxy: which('haproxy'), patronictl: which('patronictl') };
  const missing = Object.entries(binaries).filter(([, file]) => !file).map(([name]) => name);
  if (missing.length) throw new Error(`${missing.join(', ')} not installed (Debian: apt-get install -y patroni etcd-server haproxy)`);
  installExitHook();

  const scope = `gemstone-${crypto.randomBytes(4).toString('hex')}`;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `gemstone-patroni-${synchronous ? 'sync' : 'async'}-`));
  roots.add(root);
  const asPostgres = process.getuid?.() === 0;
  const owner = asPostgres
    ? { uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) }
    : {};
  const bin = postgresBin();
  /** Daemons started here: pid → what it is. */
  const daemons = new Map();
  /** Exits of daemons that were not asked to stop (a crashed Patroni is a broken test, not a scenario). */
  const unexpectedExits = [];
  let stopping = false;

  /** @param {string} name @param {string} file @param {string[]} args @param {string} log */
  const startDaemon = (name, file, args, log) => {
    const fd = fs.openSync(log, 'a');
    const child = spawn(file, args, {
      cwd: root,
      detached: true,
      stdio: ['ignore', fd, fd],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' },
      ...owner,
    });
    fs.closeSync(fd);
    child.unref();
    const pid = /** @type {number} */ (child.pid);
    running.add(pid);
    daemons.set(pid, name);
    child.on('exit', (code, sig) => {
      running.delete(pid);
      daemons.delete(pid);
      if (!stopping) unexpectedExits.push(`${name} (pid ${pid}) exited: ${sig ?? code}`);
    });
    return pid;
  };

  const etcdClient = await freePort();
  const etcdPeer = await freePort();
  const haproxyPort = await freePort();
  const statsPort = await freePort();
  /** @type {Member[]} */
  const members = [];
  for (let index = 0; index < count; index++) {
    const name = `m${index}`;
    const dir = path.join(root, name);
    fs.mkdirSync(dir);
    const etcdLink = new ChaosProxy({ targetHost: '127.0.0.1', targetPort: etcdClient, name: `${name}-etcd` });
    await etcdLink.listen();
    members.push({
      name,
      pgPort: await freePort(),
      restPort: await freePort(),
      dir,
      dataDir: path.join(dir, 'data'),
      config: path.join(root, `${name}.yml`),
      log: path.join(root, `${name}.log`),
      etcdLink,
      patroniPid: undefined,
    });
  }
  for (const member of members) dataDirs.add(member.dataDir);

  const patroniConfig = (/** @type {Member} */ member) => `scope: ${scope}
name: ${member.name}
log:
  level: INFO
restapi:
  listen: 127.0.0.1:${member.restPort}
  connect_address: 127.0.0.1:${member.restPort}
${dcsApi}:
  # Its own proxy to etcd; no discovery of etcd's other addresses (which would bypass it).
  hosts: 127.0.0.1:${member.etcdLink.port}
  use_proxies: true
bootstrap:
  dcs:
    ttl: ${timing.ttl}
    loop_wait: ${timing.loopWait}
    retry_timeout: ${timing.retryTimeout}
    maximum_lag_on_failover: 1048576
    synchronous_mode: ${synchronous}
    synchronous_mode_strict: ${strict}
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 64MB
        max_connections: 80
        shared_buffers: 16MB
        # The data directories are thrown away and the faults are process faults (the kernel's
        # page cache survives them), not power losses: no fsync on a shared machine.
        fsync: 'off'
        wal_receiver_status_interval: 1
  initdb:
    - encoding: UTF8
    - no-sync
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${member.pgPort}
  connect_address: 127.0.0.1:${member.pgPort}
  data_dir: ${member.dataDir}
  bin_dir: ${bin}
  pgpass: ${path.join(member.dir, 'pgpass')}
  authentication:
    superuser: {username: postgres, password: postgres}
    replication: {username: replicator, password: replicator}
    rewind: {username: postgres, password: postgres}
  parameters:
    unix_socket_directories: ${member.dir}
`;
  for (const member of members) fs.writeFileSync(member.config, patroniConfig(member));
  // patronictl talks to etcd directly: it must work while a member is cut off.
  const ctlConfig = path.join(root, 'patronictl.yml');
  fs.writeFileSync(ctlConfig, `scope: ${scope}\n${dcsApi}:\n  hosts: 127.0.0.1:${etcdClient}\n  use_proxies: true\n`);

  const haproxyConfig = path.join(root, 'haproxy.cfg');
  fs.writeFileSync(
    haproxyConfig,
    [
      'global',
      '  maxconn 400',
      '  log stdout format raw local0 notice',
      'defaults',
      '  mode tcp',
      '  log global',
      '  retries 2',
      '  timeout connect 1s',
      '  timeout client 1h',
      '  timeout server 1h',
      `  timeout check ${check.timeoutMs}ms`,
      'listen primary',
      `  bind 127.0.0.1:${haproxyPort}`,
      '  option httpchk GET /primary',
      '  http-check expect status 200',
      `  default-server inter ${check.interMs}ms fall ${check.fall} rise ${check.rise} on-marked-down shutdown-sessions`,
      ...members.map((m) => `  server ${m.name} 127.0.0.1:${m.pgPort} maxconn 100 check port ${m.restPort}`),
      'listen stats',
      '  mode http',
      `  bind 127.0.0.1:${statsPort}`,
      '  stats enable',
      '  stats uri /',
      '',
    ].join('\n'),
  );
  if (asPostgres) execFileSync('chown', ['-R', 'postgres:postgres', root]);

  const etcdPid = startDaemon(
    'etcd',
    /** @type {string} */ (binaries.etcd),
    [
      '--name=e0',
      `--data-dir=${path.join(root, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=e0=http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster-state=new',
      ...(dcsApi === 'etcd' ? ['--enable-v2=true'] : []),
      '--logger=zap',
      '--log-level=warn',
    ],
    path.join(root, 'etcd.log'),
  );
  const haproxyPid = startDaemon('haproxy', /** @type {string} */ (binaries.haproxy), ['-f', haproxyConfig, '-db'], path.join(root, 'haproxy.log'));

  const startPatroniOf = (/** @type {Member} */ member) => {
    member.patroniPid = startDaemon(`patroni ${member.name}`, /** @type {string} */ (binaries.patroni), [member.config], member.log);
  };

  /** Reads the cluster's keys from etcd itself (not through a member's proxy). @returns {Promise<DcsState>} */
  const dcs = async () => {
    const prefix = `/service/${scope}/`;
    /** @type {Array<[string, string]>} key below the prefix, value */
    let entries;
    if (dcsApi === 'etcd3') {
      const b64 = (/** @type {string} */ s) => Buffer.from(s).toString('base64');
      const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
      const res = await request(etcdClient, '/v3/kv/range', { method: 'POST', body: { key: b64(prefix), range_end: b64(end) } });
      if (res.status !== 200) throw new Error(`etcd answered ${res.status}: ${res.body}`);
      entries = (JSON.parse(res.body).kvs ?? []).map((/** @type {{ key: string, value?: string }} */ kv) => [
        Buffer.from(kv.key, 'base64').toString().slice(prefix.length),
        Buffer.from(kv.value ?? '', 'base64').toString(),
      ]);
    } else {
      const res = await request(etcdClient, `/v2/keys${prefix}?recursive=true`);
      if (res.status === 404) return { leader: undefined, members: {}, syncStandby: undefined };
      if (res.status !== 200) throw new Error(`etcd answered ${res.status}: ${res.body}`);
      /** @type {Array<[string, string]>} */
      const found = [];
      const walk = (/** @type {{ key: string, value?: string, dir?: boolean, nodes?: any[] }} */ node) => {
        if (node.dir) for (const child of node.nodes ?? []) walk(child);
        else found.push([node.key.slice(prefix.length), node.value ?? '']);
      };
      walk(JSON.parse(res.body).node);
      entries = found;
    }
    /** @type {DcsState} */
    const state = { leader: undefined, members: {}, syncStandby: undefined };
    for (const [key, value] of entries) {
      if (key === 'leader') state.leader = value;
      else if (key === 'sync') state.syncStandby = JSON.parse(value).sync_standby ?? undefined;
      else if (key.startsWith('members/')) state.members[key.slice('members/'.length)] = JSON.parse(value);
    }
    return state;
  };

  const memberNamed = (/** @type {string} */ name) => {
    const member = members.find((m) => m.name === name);
    if (!member) throw new Error(`no member ${name}`);
    return member;
  };

  /** Runs `text` on a member's database (default `test`) and returns the rows. */
  const query = async (/** @type {string} */ name, /** @type {string} */ text, /** @type {unknown[]} */ params = [], database = 'test') => {
    const { Client } = require('pg');
    const client = new Client({ host: '127.0.0.1', port: memberNamed(name).pgPort, user: 'postgres', database, connectionTimeoutMillis: 2_000, query_timeout: 10_000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query(text, params)).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  };

  /** Which member HAProxy routes the application to, if any writable one: `{ port, name }`. */
  const routed = async (database = 'test') => {
    const { Client } = require('pg');
    const client = new Client({ host: '127.0.0.1', port: haproxyPort, user: 'postgres', database, connectionTimeoutMillis: 1_000, query_timeout: 2_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query('SELECT inet_server_port() AS port, pg_is_in_recovery() AS recovery');
      if (rows[0].recovery) return undefined;
      const port = Number(rows[0].port);
      return { port, name: members.find((m) => m.pgPort === port)?.name };
    } catch {
      return undefined;
    } finally {
      await client.end().catch(() => undefined);
    }
  };

  /**
   * Resolves the cluster's state once it is healthy: a leader in etcd, its PostgreSQL a primary
   * and the member HAProxy routes to, every other member running and streaming from it (in
   * synchronous mode one of them the synchronous standby, in etcd and on the primary).
   * @param {{ timeoutMs?: number, database?: string }} [opts]
   */
  const waitHealthy = async (opts = {}) => {
    const until = Date.now() + (opts.timeoutMs ?? 90_000);
    let last = 'nothing yet';
    for (;;) {
      if (unexpectedExits.length) throw new Error(`Patroni cluster: ${unexpectedExits.join('; ')}`);
      try {
        const state = await dcs();
        const leader = state.leader;
        if (!leader) throw new Error('no leader key');
        if (state.members[leader]?.role !== 'master' || state.members[leader]?.state !== 'running') throw new Error(`leader ${leader} is ${JSON.stringify(state.members[leader])}`);
        const others = members.filter((m) => m.name !== leader).map((m) => m.name);
        for (const name of others) {
          if (state.members[name]?.state !== 'running' || state.members[name]?.role !== 'replica') throw new Error(`${name} is ${JSON.stringify(state.members[name])}`);
        }
        const replication = await query(leader, "SELECT application_name AS name, sync_state FROM pg_stat_replication WHERE state = 'streaming'", [], 'postgres');
        for (const name of others) if (!replication.some((r) => r.name === name)) throw new Error(`${name} is not streaming from ${leader}`);
        if (synchronous) {
          if (!state.syncStandby || !others.includes(state.syncStandby)) throw new Error(`no synchronous standby in etcd (${state.syncStandby})`);
          if (!replication.some((r) => r.name === state.syncStandby && r.sync_state === 'sync')) throw new Error(`${state.syncStandby} is not synchronous on the primary`);
        }
        const route = await routed(opts.database ?? 'postgres');
        if (route?.name !== leader) throw new Error(`HAProxy routes to ${route?.name ?? 'nothing writable'}, the leader is ${leader}`);
        return state;
      } catch (error) {
        last = error instanceof Error ? error.message : String(error);
      }
      if (Date.now() > until) throw new Error(`Patroni cluster not healthy: ${last}\n${tails()}`);
      await sleep(200);
    }
  };

  const tails = () =>
    [...members.map((m) => m.log), path.join(root, 'haproxy.log'), path.join(root, 'etcd.log')]
      .map((file) => `--- ${path.basename(file)} ---\n${tail(file, 15)}`)
      .join('\n');

  const stop = () => {
    if (stopping && !roots.has(root)) return;
    stopping = true;
    for (const member of members) if (member.patroniPid !== undefined) signal(member.patroniPid, 'SIGCONT') && signal(member.patroniPid, 'SIGKILL');
    // Immediate shutdown (the postmaster takes its backends down with it), then SIGKILL.
    const postmasters = members.map((m) => killPostmaster(m.dataDir, 'SIGQUIT')).filter((pid) => pid !== undefined);
    for (const pid of [haproxyPid, etcdPid]) signal(pid, 'SIGKILL');
    awaitExits(/** @type {number[]} */ (postmasters), 10_000);
    for (const member of members) killPostmaster(member.dataDir, 'SIGKILL');
    awaitExits([...daemons.keys(), ...members.map((m) => postmasterPid(m.dataDir)).filter((p) => p !== undefined)].map(Number), 5_000);
    for (const member of members) {
      member.etcdLink.close();
      dataDirs.delete(member.dataDir);
    }
    fs.rmSync(root, { recursive: true, force: true, maxRetries: 50, retryDelay: 200 });
    roots.delete(root);
  };

  let state;
  try {
    await waitFor(async () => {
      const res = await request(etcdClient, '/health');
      if (res.status !== 200) throw new Error(`etcd /health: ${res.status}`);
    }, 30_000);
    // The first member bootstraps alone; the others are then made from it (pg_basebackup).
    startPatroniOf(members[0]);
    await waitFor(async () => {
      const s = await dcs();
      if (s.leader !== members[0].name || s.members[members[0].name]?.state !== 'running') throw new Error(`${members[0].name} has not bootstrapped (${JSON.stringify(s)})`);
    }, 60_000);
    for (const member of members.slice(1)) startPatroniOf(member);
    state = await waitHealthy({ timeoutMs: options.startTimeoutMs ?? 120_000 });
    await query(/** @type {string} */ (state.leader), 'CREATE DATABASE test', [], 'postgres');
  } catch (error) {
    const logs = tails();
    stop();
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${logs}`);
  }

  const url = `postgres://postgres@127.0.0.1:${haproxyPort}/test`;
  return {
    root,
    scope,
    dcsApi,
    synchronous,
    strict,
    timing,
    check,
    /** The application's only address: HAProxy. */
    url,
    haproxyPort,
    statsPort,
    etcdPort: etcdClient,
    members: members.map((m) => ({ name: m.name, pgPort: m.pgPort, restPort: m.restPort, dataDir: m.dataDir, log: m.log })),
    dcs,
    query,
    routed,
    waitHealthy,
    /** Fails if a daemon exited that nobody stopped. */
    assertRunning: () => {
      if (unexpectedExits.length) throw new Error(`Patroni cluster: ${unexpectedExits.join('; ')}`);
    },
    /** `patronictl switchover` to `candidate` (Patroni picks one if undefined); resolves with its output. */
    switchover: async (/** @type {string} */ leader, /** @type {string | undefined} */ candidate) => {
      const args = ['-c', ctlConfig, 'switchover', '--leader', leader, ...(candidate ? ['--candidate', candidate] : []), '--force'];
      const { stdout } = await execFileAsync(/** @type {string} */ (binaries.patronictl), args, { env: { ...process.env, HOME: root }, timeout: 60_000 });
      return stdout;
    },
    /** SIGKILL of a member's postmaster (its backends notice and exit); resolves the pid killed. */
    killPostmaster: (/** @type {string} */ name) => {
      const pid = killPostmaster(memberNamed(name).dataDir, 'SIGKILL');
      if (pid === undefined) throw new Error(`${name} has no running postmaster`);
      return pid;
    },
    /** SIGSTOP / SIGCONT of a member's Patroni (its PostgreSQL keeps running). */
    pausePatroni: (/** @type {string} */ name) => {
      const pid = memberNamed(name).patroniPid;
      if (pid === undefined || !signal(pid, 'SIGSTOP')) throw new Error(`cannot stop Patroni of ${name}`);
    },
    resumePatroni: (/** @type {string} */ name) => {
      const pid = memberNamed(name).patroniPid;
      if (pid === undefined || !signal(pid, 'SIGCONT')) throw new Error(`cannot continue Patroni of ${name}`);
    },
    /** Holds every byte between a member's Patroni and etcd (connections stay open), until `healEtcd`. */
    cutFromEtcd: (/** @type {string} */ name) => memberNamed(name).etcdLink.hang(),
    healEtcd: (/** @type {string} */ name) => memberNamed(name).etcdLink.heal(),
    /** The last lines of every log: for failure messages. */
    tails,
    stop,
  };
}

/** Polls `probe` until it resolves (or rejects with its last error after `timeoutMs`). @param {() => Promise<void>} probe @param {number} timeoutMs */
async function waitFor(probe, timeoutMs) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      await probe();
      return;
    } catch (error) {
      if (Date.now() > until) throw error;
      await sleep(200);
    }
  }
}

/** Waits (blocking: only at teardown) until the pids have exited. @param {number[]} pids @param {number} timeoutMs */
function awaitExits(pids, timeoutMs) {
  const until = Date.now() + timeoutMs;
  while (pids.some((pid) => signal(pid, 0)) && Date.now() < until) execFileSync('sleep', ['0.1']);
  for (const pid of pids) signal(pid, 'SIGKILL');
}

/** The last `lines` lines of a file, or '' when it cannot be read. @param {string} file @param {number} lines */
function tail(file, lines) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/**
 * The pause check: `trials` times, a fresh synchronous cluster on the given etcd API; the primary's
 * Patroni is stopped (SIGSTOP) at a random point of its loop, a row is committed — acknowledged,
 * synchronously replicated — through HAProxy on the member promoted meanwhile, Patroni is
 * continued, and 15 s later the row is looked for on whichever member then leads.
 * @param {'etcd' | 'etcd3'} dcsApi @param {number} trials
 */
async function pauseCheck(dcsApi, trials) {
  const { Client } = require('pg');
  let lost = 0;
  for (let trial = 1; trial <= trials; trial++) {
    const cluster = await startPatroni({ synchronous: true, dcs: dcsApi });
    try {
      const before = await cluster.waitHealthy();
      const old = /** @type {string} */ (before.leader);
      await cluster.query(old, 'CREATE TABLE pause_check (v text)');
      await sleep(Math.random() * 2_000);
      cluster.pausePatroni(old);
      let route;
      while (!(route = await cluster.routed()) || route.name === old) await sleep(200);
      const client = new Client({ connectionString: cluster.url });
      await client.connect();
      await client.query("INSERT INTO pause_check VALUES ('acknowledged')");
      await client.end();
      cluster.resumePatroni(old);
      await sleep(15_000);
      const after = await cluster.dcs();
      const rows = await cluster.query(/** @type {string} */ (after.leader), 'SELECT v FROM pause_check');
      if (!rows.length) lost++;
      console.log(
        `${dcsApi} #${trial}: paused ${old}, promoted ${route.name}, leader after resume ${after.leader}: ` +
          `${rows.length ? 'the acknowledged row is there' : 'the acknowledged row is GONE'}`,
      );
    } finally {
      cluster.stop();
    }
  }
  console.log(`${dcsApi}: ${lost} of ${trials} trials lost the acknowledged row`);
}

module.exports = { startPatroni, DEFAULT_TIMING, DEFAULT_CHECK, DEFAULT_DCS };

if (require.main === module && process.argv[2] === 'pause-check') {
  const dcsApi = process.argv[3] === 'etcd3' ? 'etcd3' : 'etcd';
  pauseCheck(dcsApi, Number(process.argv[4] ?? 5)).then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
} else if (require.main === module) {
  const synchronous = process.argv[2] !== 'async';
  startPatroni({ synchronous, dcs: process.env.PATRONI_DCS === 'etcd3' ? 'etcd3' : undefined }).then(
    (cluster) => {
      console.log(`application (HAProxy): ${cluster.url}`);
      console.log(`HAProxy stats: http://127.0.0.1:${cluster.statsPort}/   etcd: http://127.0.0.1:${cluster.etcdPort}`);
      for (const m of cluster.members) console.log(`${m.name}: postgres 127.0.0.1:${m.pgPort}, REST 127.0.0.1:${m.restPort}`);
      console.log(`patronictl -c ${sq(path.join(cluster.root, 'patronictl.yml'))} list`);
      console.log('Ctrl-C stops the cluster');
      const done = () => {
        cluster.stop();
        process.exit(0);
      };
      process.on('SIGINT', done);
      process.on('SIGTERM', done);
      setInterval(() => undefined, 1 << 30);
    },
    (error) => {
      console.error(error.message);
      process.exit(1);
    },
  );
}
