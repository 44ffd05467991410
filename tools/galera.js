// @ts-check
'use strict';
/**
 * A private MariaDB Galera cluster for tests: N nodes (default 3) of the machine's installed
 * `mariadbd` with the Galera 4 provider, each in a temporary directory of its own, on loopback
 * free loopback ports (`freePort`) (client, group communication, IST and SST ports per node). The
 * machine's shared MariaDB is never touched.
 *
 * The first node bootstraps the cluster (`--wsrep-new-cluster`); the others join it one by one
 * and receive their data by rsync SST. Buffers are small (the cluster shares a 2-core machine).
 * `stop()` shuts every node down and removes its directory; nodes still running when the process
 * exits (a crashed test run) are killed by an exit hook, so none outlives its runner.
 *
 *   node tools/galera.js [nodes]   starts a cluster, prints its URLs, stops it on Ctrl-C
 */
const { execFileSync, execSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { freePort, installMariadb, mariadbTmpdir } = require('./private-db');

/** The Galera provider of Debian's `galera-4` package. */
const DEFAULT_PROVIDER = '/usr/lib/galera/libgalera_smm.so';
/** How long one node may take to start and reach `Synced` (an SST included). */
const DEFAULT_NODE_START_MS = 90_000;

/**
 * @typedef {{ index: number, url: string, port: number, dir: string, pidFile: string }} GaleraNode
 * @typedef {{ nodes: GaleraNode[], clusterName: string, stop: () => void }} GaleraCluster
 */

/** Single-quotes a value for /bin/sh. @param {string} value */
const sq = (value) => `'${value.replace(/'/g, `'\\''`)}'`;

/** Pids of nodes this process started and has not stopped yet: killed by the exit hook. */
const running = new Set();
let exitHookInstalled = false;
function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const pid of running) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });
}

/** @param {string} pidFile @returns {number | undefined} */
function readPid(pidFile) {
  try {
    const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** @param {number} ms */
const pause = (ms) => execSync(`sleep ${ms / 1000}`);

/**
 * Starts a Galera cluster of `nodes` MariaDB servers (root with an empty password over TCP,
 * database `test` on every node). Throws, with every node it started already stopped and removed,
 * when a node does not reach `Synced` in time (the message carries the end of its error log).
 * @param {{ nodes?: number, provider?: string, nodeStartMs?: number, binlog?: boolean }} [options]
 * @returns {Promise<GaleraCluster>}
 */
async function startGalera(options = {}) {
  const count = options.nodes ?? 3;
  const provider = options.provider ?? DEFAULT_PROVIDER;
  if (!fs.existsSync(provider)) throw new Error(`no Galera provider at ${provider} (Debian: apt-get install galera-4)`);
  installExitHook();
  const clusterName = `gemstone-${crypto.randomBytes(4).toString('hex')}`;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-galera-'));
  const specs = [];
  for (let index = 0; index < count; index++) {
    const dir = path.join(root, `node${index}`);
    fs.mkdirSync(dir);
    specs.push({ index, dir, port: await freePort(), gcomm: await freePort(), ist: await freePort(), sst: await freePort() });
  }
  const address = `gcomm://${specs.map((s) => `127.0.0.1:${s.gcomm}`).join(',')}`;
  /** @type {GaleraNode[]} */
  const nodes = [];
  const stop = () => {
    for (const node of [...nodes].reverse()) stopNode(node);
    fs.rmSync(root, { recursive: true, force: true, maxRetries: 50, retryDelay: 200 });
  };
  try {
    for (const spec of specs) {
      const data = path.join(spec.dir, 'data');
      const pidFile = path.join(spec.dir, 'mysqld.pid');
      const tmpdir = mariadbTmpdir(spec.dir);
      if (spec.index === 0) {
        installMariadb(data, tmpdir);
      } else {
        // Filled by the SST from a donor. The joiner's rsync daemon started by root drops to
        // `nobody`, which must be able to write there.
        fs.mkdirSync(data);
        if (process.getuid?.() === 0) execFileSync('chown', ['nobody', data]);
      }
      const providerOptions = [
        `gmcast.listen_addr=tcp://127.0.0.1:${spec.gcomm}`,
        `ist.recv_addr=127.0.0.1:${spec.ist}`,
        'gcache.size=16M',
        'gcache.page_size=16M',
        // A node that left is not waited for: tests stop the cluster as a whole.
        'pc.recovery=FALSE',
      ].join(';');
      const args = [
        '--no-defaults',
        `--datadir=${data}`,
        `--tmpdir=${tmpdir}`,
        `--port=${spec.port}`,
        '--bind-address=127.0.0.1',
        `--socket=${path.join(spec.dir, 'mysqld.sock')}`,
        `--pid-file=${pidFile}`,
        `--log-error=${path.join(spec.dir, 'server.log')}`,
        '--user=root',
        '--innodb-buffer-pool-size=32M',
        '--innodb-log-file-size=16M',
        '--innodb-flush-log-at-trx-commit=0',
        '--performance-schema=OFF',
        '--max-connections=60',
        '--binlog-format=ROW',
        '--innodb-autoinc-lock-mode=2',
        '--default-storage-engine=InnoDB',
        '--wsrep-on=ON',
        `--wsrep-provider=${provider}`,
        `--wsrep-provider-options=${providerOptions}`,
        `--wsrep-cluster-name=${clusterName}`,
        `--wsrep-cluster-address=${address}`,
        `--wsrep-node-name=node${spec.index}`,
        `--wsrep-node-address=127.0.0.1:${spec.gcomm}`,
        `--wsrep-node-incoming-address=127.0.0.1:${spec.port}`,
        '--wsrep-sst-method=rsync',
        `--wsrep-sst-receive-address=127.0.0.1:${spec.sst}`,
        ...(options.binlog
          ? [`--log-bin=${path.join(spec.dir, 'binlog')}`, '--log-slave-updates=ON', '--binlog-annotate-row-events=ON', '--replicate-annotate-row-events=ON']
          : ['--skip-log-bin']),
        ...(spec.index === 0 ? ['--wsrep-new-cluster'] : []),
      ];
      // Detached and with no inherited output, so a test runner never waits on the server's pipes.
      execSync(`setsid /usr/sbin/mariadbd ${args.map(sq).join(' ')} </dev/null >>${sq(path.join(spec.dir, 'server.out'))} 2>&1 &`, {
        stdio: 'ignore',
        shell: '/bin/sh',
      });
      const node = { index: spec.index, url: `mysql://root@127.0.0.1:${spec.port}/test`, port: spec.port, dir: spec.dir, pidFile };
      nodes.push(node);
      waitSynced(node, options.nodeStartMs ?? DEFAULT_NODE_START_MS);
      if (spec.index === 0) execSync(`${admin(node)} create test`, { stdio: 'pipe' });
    }
    const size = statusOf(nodes[0], 'wsrep_cluster_size');
    if (Number(size) !== count) throw new Error(`Galera cluster has ${size} nodes, expected ${count}`);
    return { nodes, clusterName, stop };
  } catch (error) {
    const last = nodes[nodes.length - 1];
    const log = last ? tail(path.join(last.dir, 'server.log'), 30) : '';
    stop();
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n--- node${last?.index} server.log ---\n${log}`);
  }
}

/** @param {GaleraNode} node */
const admin = (node) => `mariadb-admin --no-defaults -h 127.0.0.1 -P ${node.port} -u root`;

/** @param {GaleraNode} node @param {string} variable */
function statusOf(node, variable) {
  const out = execSync(`mariadb --no-defaults -h 127.0.0.1 -P ${node.port} -u root -N -B -e ${sq(`SHOW GLOBAL STATUS LIKE '${variable}'`)}`, {
    stdio: 'pipe',
  });
  return String(out).trim().split('\t')[1] ?? '';
}

/** Waits until the node answers and reports `wsrep_local_state_comment = Synced`. @param {GaleraNode} node @param {number} timeoutMs */
function waitSynced(node, timeoutMs) {
  const until = Date.now() + timeoutMs;
  let last = 'not started';
  for (;;) {
    const pid = readPid(node.pidFile);
    if (pid !== undefined) running.add(pid);
    try {
      last = statusOf(node, 'wsrep_local_state_comment');
      if (last === 'Synced') return;
    } catch (error) {
      last = String(/** @type {{ stderr?: unknown }} */ (error).stderr ?? error).trim();
    }
    if (Date.now() > until) throw new Error(`Galera node${node.index} did not reach Synced within ${timeoutMs} ms (last: ${last})`);
    pause(200);
  }
}

/** Shuts a node down (killing it if it does not exit) and forgets it. @param {GaleraNode} node */
function stopNode(node) {
  const pid = readPid(node.pidFile);
  try {
    execSync(`${admin(node)} shutdown`, { stdio: 'pipe', timeout: 30_000 });
  } catch {
    // Not answering: killed below.
  }
  if (pid === undefined) return;
  const until = Date.now() + 30_000;
  while (alive(pid) && Date.now() < until) pause(100);
  if (alive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Exited meanwhile.
    }
    const hardUntil = Date.now() + 5_000;
    while (alive(pid) && Date.now() < hardUntil) pause(100);
  }
  running.delete(pid);
}

/** The last `lines` lines of a file, or '' when it cannot be read. @param {string} file @param {number} lines */
function tail(file, lines) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

module.exports = { startGalera, DEFAULT_PROVIDER, DEFAULT_NODE_START_MS };

if (require.main === module) {
  const count = Number(process.argv[2] ?? 3);
  startGalera({ nodes: count, binlog: process.env.GALERA_BINLOG === '1' }).then(
    (cluster) => {
      for (const node of cluster.nodes) console.log(`node${node.index}: ${node.url}  (${node.dir})`);
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
