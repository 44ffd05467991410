// @ts-check
'use strict';
/**
 * Private database servers for tests that restart (or later replicate) a server: a PostgreSQL
 * cluster or a MariaDB server of the machine's installed binaries, in a temporary directory, on a
 * loopback port of its own. The machine's shared services are never touched.
 *
 * Each server comes with the shell command that restarts it (fast shutdown, then start on the same
 * port and data directory), for `npm run chaos -- --db-restart` via CHAOS_DB_RESTART_CMD.
 */
const { execFileSync, execSync } = require('child_process');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');

/** @typedef {{ kind: 'postgres' | 'mariadb', url: string, port: number, dir: string, restartCommand: string, stop: () => void }} PrivateServer */

/** Ports this process has handed out: never handed out twice, even after the server let go. */
const handedOut = new Set();

/**
 * A loopback TCP port that is free now, for a server started next. It is chosen below the kernel's
 * ephemeral range, not by `listen(0)`: the kernel takes a `listen(0)` port from the range it also
 * uses for the local end of outgoing connections, so between this function closing the port and
 * the server binding it (seconds for a Patroni member or a Galera node, and again at every restart
 * of a server on its port) any client connection of the machine may take it; CI runs database-heavy
 * test stages beside the HA files, and a Patroni member whose REST port was taken exits at once.
 * Below the range only listeners compete: a random pick, checked by binding it.
 * @returns {Promise<number>}
 */
async function freePort() {
  const [ephemeralLow] = ephemeralRange();
  const low = 10_000;
  const high = Math.min(ephemeralLow, 65_536) - 1;
  if (high - low < 1_000) return kernelPort();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (handedOut.has(port)) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  return kernelPort();
}

/** The kernel's ephemeral port range (Linux; elsewhere the IANA default). @returns {[number, number]} */
function ephemeralRange() {
  try {
    const [low, high] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low, high];
  } catch {
    // Not Linux.
  }
  return [49_152, 65_535];
}

/** @param {number} port @returns {Promise<boolean>} */
function canListen(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A free loopback port as the kernel hands it out (the fallback). @returns {Promise<number>} */
function kernelPort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = /** @type {net.AddressInfo} */ (server.address());
      server.close(() => resolve(address.port));
    });
  });
}

/**
 * Removes a server's directory once the server has let go of it. A server that stopped listening
 * may still be flushing files for a moment, so removal is retried (ENOTEMPTY) before giving up.
 * @param {string} dir
 */
function removeDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true, maxRetries: 50, retryDelay: 200 });
}

/**
 * Waits for the process whose pid is in `pidFile` to exit, and kills it if it has not within
 * `timeoutMs`. A missing or stale pid file means there is nothing to wait for.
 * @param {string} pidFile @param {number} timeoutMs
 */
function awaitExit(pidFile, timeoutMs) {
  let pid;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0) return;
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const until = Date.now() + timeoutMs;
  while (alive() && Date.now() < until) execSync('sleep 0.1');
  if (alive()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Exited meanwhile.
    }
    const hardUntil = Date.now() + 5_000;
    while (alive() && Date.now() < hardUntil) execSync('sleep 0.1');
  }
}

/** Single-quotes a value for /bin/sh. @param {string} value */
const sq = (value) => `'${value.replace(/'/g, `'\\''`)}'`;

/** The newest installed PostgreSQL's bin directory. */
function postgresBin() {
  const root = '/usr/lib/postgresql';
  const versions = fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  if (!versions.length) throw new Error(`no PostgreSQL binaries under ${root}`);
  return path.join(root, versions[0], 'bin');
}

/** Polls `probe` until it succeeds (or throws after `timeoutMs`). @param {() => void} probe @param {number} timeoutMs */
function waitFor(probe, timeoutMs) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      probe();
      return;
    } catch (error) {
      if (Date.now() > until) throw error;
      execSync('sleep 0.2');
    }
  }
}

/**
 * Starts a private PostgreSQL cluster (trust auth, user postgres, database `test`). PostgreSQL
 * refuses to run as root, so when we are root the cluster belongs to the `postgres` user.
 * @returns {Promise<PrivateServer>}
 */
async function startPostgres() {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-private-pg-'));
  const data = path.join(dir, 'data');
  const bin = postgresBin();
  const asOwner = process.getuid?.() === 0 ? `runuser -u postgres -- ` : '';
  if (asOwner) execFileSync('chown', ['postgres:postgres', dir]);
  const run = (/** @type {string} */ command) => execSync(`${asOwner}${command}`, { stdio: 'pipe', cwd: dir });
  run(`${sq(path.join(bin, 'initdb'))} -D ${sq(data)} -A trust -U postgres --no-sync -E UTF8`);
  // fsync off: the data directory is thrown away; what is tested is the restart, not the disk.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const pgCtl = `${asOwner}${sq(path.join(bin, 'pg_ctl'))} -D ${sq(data)} -l ${sq(path.join(dir, 'server.log'))}`;
  execSync(`${pgCtl} -o ${sq(options)} -w start`, { stdio: 'pipe', cwd: dir });
  execSync(`${asOwner}${sq(path.join(bin, 'createdb'))} -h 127.0.0.1 -p ${port} -U postgres test`, { stdio: 'pipe', cwd: dir });
  return {
    kind: 'postgres',
    url: `postgres://postgres@127.0.0.1:${port}/test`,
    port,
    dir,
    restartCommand: `cd ${sq(dir)} && ${pgCtl} -m fast -o ${sq(options)} -w restart`,
    stop: () => {
      try {
        execSync(`cd ${sq(dir)} && ${pgCtl} -m immediate -w stop`, { stdio: 'pipe' });
      } catch {
        // Already down.
      }
      removeDir(dir);
    },
  };
}

/**
 * The tmpdir of a private MariaDB server under `dir` (created), for `mariadb-install-db` and the
 * server alike: a starting mariadbd, install-db's bootstrap too, deletes every `#sql*` file in its
 * tmpdir, and in the default /tmp those are the shared server's temporary tables in use (a
 * clean-clone CI run: a query of the 0.3 stage on the shared MariaDB failed with "Error on delete
 * of '/tmp/#sql-temptable-….MAI'" while test:ha started its servers beside it).
 * @param {string} dir
 */
function mariadbTmpdir(dir) {
  const tmpdir = path.join(dir, 'tmp');
  fs.mkdirSync(tmpdir);
  return tmpdir;
}

/**
 * Creates a MariaDB data directory `data` (root with an empty password), its temporary files in `tmpdir`.
 * @param {string} data
 * @param {string} tmpdir
 */
function installMariadb(data, tmpdir) {
  execFileSync('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, `--tmpdir=${tmpdir}`, '--user=root', '--auth-root-authentication-method=normal', '--skip-test-db'], { stdio: 'pipe' });
}

/**
 * Starts a private MariaDB server (root with an empty password over TCP, database `test`).
 * `serverArgs` are added to the server's command line (e.g. `--autocommit=0`, `--sql-mode=…`: a
 * server default the shared server must not be given).
 * @param {{ serverArgs?: string[] }} [options]
 * @returns {Promise<PrivateServer>}
 */
async function startMariadb(options = {}) {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-private-mariadb-'));
  const data = path.join(dir, 'data');
  const pidFile = path.join(dir, 'mysqld.pid');
  const tmpdir = mariadbTmpdir(dir);
  installMariadb(data, tmpdir);
  const args = [
    '--no-defaults',
    `--datadir=${data}`,
    `--tmpdir=${tmpdir}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    `--socket=${path.join(dir, 'mysqld.sock')}`,
    `--pid-file=${pidFile}`,
    `--log-error=${path.join(dir, 'server.log')}`,
    '--user=root',
    '--innodb-flush-log-at-trx-commit=0',
    '--skip-log-bin',
    ...(options.serverArgs ?? []),
  ];
  // Detached and with no inherited output, so a test runner never waits on the server's pipes.
  const start = `setsid /usr/sbin/mariadbd ${args.map(sq).join(' ')} </dev/null >>${sq(path.join(dir, 'server.out'))} 2>&1 &`;
  const admin = `mariadb-admin --no-defaults -h 127.0.0.1 -P ${port} -u root`;
  const ping = () => execSync(`${admin} ping`, { stdio: 'pipe' });
  const up = `for i in $(seq 1 300); do ${admin} ping >/dev/null 2>&1 && exit 0; sleep 0.2; done; exit 1`;
  // Down means the process has exited, not just stopped answering: a new server started on the
  // same data directory before the old one let go of it waits on InnoDB's file locks.
  const down =
    `pid=$(cat ${sq(pidFile)} 2>/dev/null); ${admin} shutdown >/dev/null 2>&1; ` +
    `for i in $(seq 1 300); do [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done; exit 1`;
  execSync(start, { stdio: 'ignore', shell: '/bin/sh' });
  waitFor(ping, 60_000);
  execSync(`${admin} create test`, { stdio: 'pipe' });
  return {
    kind: 'mariadb',
    url: `mysql://root@127.0.0.1:${port}/test`,
    port,
    dir,
    restartCommand: `(${down}) || exit 1\n${start}\n(${up})`,
    stop: () => {
      try {
        execSync(down, { stdio: 'pipe', shell: '/bin/sh' });
      } catch {
        // Already down.
      }
      // It stops answering pings before it has finished writing its files.
      awaitExit(pidFile, 30_000);
      removeDir(dir);
    },
  };
}

/**
 * Starts a private PgBouncer on a loopback port of its own, in front of PostgreSQL at
 * `targetHost:targetPort` (every database name is passed through; `auth_type = trust`, so the
 * server's own authentication applies). PgBouncer only forwards connections: the server is not
 * reconfigured, so the target may be the shared server. PgBouncer refuses to run as root, so when
 * we are root it runs as the `postgres` user.
 * @param {{ targetHost?: string, targetPort?: number, poolMode?: 'session' | 'transaction' | 'statement', poolSize?: number }} [options]
 * @returns {Promise<{ kind: 'pgbouncer', port: number, dir: string, rewrite: (url: string) => string, stop: () => void }>}
 */
async function startPgbouncer(options = {}) {
  const { targetHost = '127.0.0.1', targetPort = 5432, poolMode = 'transaction', poolSize = 4 } = options;
  const binary = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((candidate) => fs.existsSync(candidate));
  if (!binary) throw new Error('pgbouncer is not installed (apt-get install -y pgbouncer)');
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-private-pgbouncer-'));
  const pidFile = path.join(dir, 'pgbouncer.pid');
  const ini = path.join(dir, 'pgbouncer.ini');
  fs.writeFileSync(path.join(dir, 'userlist.txt'), '"postgres" ""\n');
  fs.writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${targetHost} port=${targetPort}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      `pool_mode = ${poolMode}`,
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 200',
      // Idle server connections close soon: the target may be a shared server.
      'server_idle_timeout = 5',
      'ignore_startup_parameters = extra_float_digits,options',
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      `pidfile = ${pidFile}`,
      '',
    ].join('\n'),
  );
  const asOwner = process.getuid?.() === 0 ? 'runuser -u postgres -- ' : '';
  if (asOwner) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  execSync(`${asOwner}${sq(binary)} -d ${sq(ini)}`, { stdio: 'pipe' });
  waitFor(() => {
    if (!fs.existsSync(pidFile)) throw new Error(`pgbouncer did not start (see ${path.join(dir, 'pgbouncer.log')})`);
  }, 10_000);
  return {
    kind: 'pgbouncer',
    port,
    dir,
    rewrite: (url) => {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    stop: () => {
      try {
        const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
        // SIGINT: shut down at once, closing client and server connections.
        if (Number.isInteger(pid) && pid > 0) process.kill(pid, 'SIGINT');
      } catch {
        // Already down.
      }
      awaitExit(pidFile, 10_000);
      removeDir(dir);
    },
  };
}

/**
 * A private PostgreSQL primary with one streaming standby (pg_basebackup -R), on loopback ports of
 * their own: `synchronous` sets `synchronous_standby_names = '*'` (a commit returns once the
 * standby has flushed it), otherwise replication is asynchronous. Every step is asynchronous so
 * that the caller's event loop (electors under test) keeps running during a failover.
 *
 * - `failover()`: the primary dies (immediate shutdown: no checkpoint, connections dropped, like a
 *   crash) and the standby is promoted; there is no standby until `addStandby()`.
 * - `addStandby()`: a new standby of the current primary (a fresh base backup), streaming. With
 *   `synchronous`, commits on a primary without a standby wait for one.
 * @param {{ synchronous: boolean }} options
 */
async function startReplicatedPostgres({ synchronous }) {
  const { promisify } = require('util');
  const exec = promisify(require('child_process').exec);
  const bin = postgresBin();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `gemstone-private-pg-${synchronous ? 'sync' : 'async'}-`));
  const asOwner = process.getuid?.() === 0 ? 'runuser -u postgres -- ' : '';
  if (asOwner) execFileSync('chown', ['postgres:postgres', root]);
  const run = (/** @type {string} */ command) => exec(`${asOwner}${command}`, { cwd: root, maxBuffer: 16 * 1024 * 1024 });
  // Small and unsynced: the clusters are thrown away; two of them share a busy machine.
  const settings = [
    '-c listen_addresses=127.0.0.1',
    `-k ${root}`,
    '-c fsync=off',
    '-c shared_buffers=16MB',
    '-c max_connections=60',
    '-c wal_level=replica',
    '-c max_wal_senders=4',
    '-c wal_keep_size=64MB',
    '-c hot_standby=on',
    '-c wal_receiver_status_interval=1',
    `-c synchronous_standby_names=${synchronous ? "'*'" : "''"}`,
  ].join(' ');
  /** @typedef {{ name: string, port: number, data: string, log: string }} Node */
  let serial = 0;
  const newNode = async () => {
    const name = `node${++serial}`;
    return { name, port: await freePort(), data: path.join(root, name), log: path.join(root, `${name}.log`) };
  };
  const pgCtl = (/** @type {Node} */ node) => `${sq(path.join(bin, 'pg_ctl'))} -D ${sq(node.data)} -l ${sq(node.log)}`;
  const start = (/** @type {Node} */ node) => run(`${pgCtl(node)} -o ${sq(`-p ${node.port} ${settings}`)} -w -t 60 start`);
  const psql = (/** @type {Node} */ node, /** @type {string} */ text) =>
    run(`${sq(path.join(bin, 'psql'))} -h 127.0.0.1 -p ${node.port} -U postgres -d postgres -Atqc ${sq(text)}`).then((r) => r.stdout.trim());

  /** @type {Node} */
  let primary = await newNode();
  /** @type {Node | undefined} */
  let standby;
  /** @type {Node[]} */
  const all = [primary];
  await run(`${sq(path.join(bin, 'initdb'))} -D ${sq(primary.data)} -A trust -U postgres --no-sync -E UTF8`);
  await start(primary);
  // Committed locally: with synchronous_standby_names set and no standby yet, a commit would wait.
  await run(`env PGOPTIONS='-c synchronous_commit=local' ${sq(path.join(bin, 'createdb'))} -h 127.0.0.1 -p ${primary.port} -U postgres test`);

  const addStandby = async () => {
    const node = await newNode();
    all.push(node);
    await run(`${sq(path.join(bin, 'pg_basebackup'))} -h 127.0.0.1 -p ${primary.port} -U postgres -D ${sq(node.data)} -R -X stream --no-sync -c fast`);
    await start(node);
    standby = node;
    const want = synchronous ? 'sync' : 'async';
    const until = Date.now() + 60_000;
    for (;;) {
      const states = await psql(primary, "SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'").catch(() => '');
      if (states.split('\n').includes(want)) return;
      if (Date.now() > until) throw new Error(`the standby on port ${node.port} is not streaming (${want}); see ${node.log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  await addStandby();

  const urlOf = (/** @type {Node} */ node) => `postgres://postgres@127.0.0.1:${node.port}/test`;
  return {
    root,
    synchronous,
    get primary() {
      return { port: primary.port, url: urlOf(primary) };
    },
    get standby() {
      return standby && { port: standby.port, url: urlOf(standby) };
    },
    /** Runs SQL on the current primary's `test` database as postgres (psql, unaligned output). */
    primarySql: (/** @type {string} */ text) =>
      run(`${sq(path.join(bin, 'psql'))} -h 127.0.0.1 -p ${primary.port} -U postgres -d test -Atqc ${sq(text)}`).then((r) => r.stdout.trim()),
    addStandby,
    /**
     * Stops the standby's streaming (it keeps what it has): from now on it lags, as an
     * asynchronous standby under load does. Commits on a synchronous primary then wait.
     */
    detachStandby: async () => {
      if (!standby) throw new Error('no standby');
      await psql(standby, "ALTER SYSTEM SET primary_conninfo TO ''");
      await psql(standby, 'SELECT pg_reload_conf()');
      const until = Date.now() + 30_000;
      while ((await psql(primary, 'SELECT count(*) FROM pg_stat_replication')) !== '0') {
        if (Date.now() > until) throw new Error('the standby did not stop streaming');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    /** Kills the primary (immediate shutdown) and promotes the standby; resolves once it accepts writes. */
    failover: async () => {
      if (!standby) throw new Error('no standby to promote');
      const dead = primary;
      await run(`${pgCtl(dead)} -m immediate -w stop`);
      await run(`${pgCtl(standby)} -w -t 60 promote`);
      primary = standby;
      standby = undefined;
      fs.rmSync(dead.data, { recursive: true, force: true });
      return { port: primary.port, url: urlOf(primary) };
    },
    stop: () => {
      for (const node of all) {
        try {
          execSync(`${asOwner}${pgCtl(node)} -m immediate -w stop`, { stdio: 'pipe', cwd: root });
        } catch {
          // Already down (or never started).
        }
      }
      removeDir(root);
    },
  };
}

/**
 * How long the server at `url` has been up, by its own count (MariaDB counts whole seconds), and
 * its clock's now: a restart shows as an uptime shorter than the time since an earlier read. The
 * uptime is a difference of the server's wall-clock readings, so a step of that clock moves it by
 * the step (the test machine's steps measured a few hundred ms).
 * @param {string} url @returns {Promise<{ now: number, uptimeMs: number }>}
 */
async function serverUptime(url) {
  if (/^postgres/.test(url)) {
    const { Client } = require('pg');
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(
        'SELECT extract(epoch FROM clock_timestamp()) * 1000 AS now, extract(epoch FROM clock_timestamp() - pg_postmaster_start_time()) * 1000 AS up',
      );
      return { now: Number(rows[0].now), uptimeMs: Number(rows[0].up) };
    } finally {
      await client.end();
    }
  }
  const mysql = require('mysql2/promise');
  const connection = await mysql.createConnection({ uri: url });
  try {
    const [rows] = await connection.query(
      "SELECT UNIX_TIMESTAMP(NOW(3)) * 1000 AS now, VARIABLE_VALUE * 1000 AS up FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'",
    );
    const row = /** @type {any} */ (rows)[0];
    return { now: Number(row.now), uptimeMs: Number(row.up) };
  } finally {
    await connection.end();
  }
}

module.exports = { startPostgres, startMariadb, startPgbouncer, startReplicatedPostgres, serverUptime, freePort, mariadbTmpdir, installMariadb };
