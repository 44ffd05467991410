// @ts-check
'use strict';
/**
 * A TCP proxy in front of the database, one per worker, so one worker's traffic can be faulted:
 * - `cut`: close every connection (both ends) and refuse new ones — the server rolls back;
 * - `hang`: hold every byte in both directions until healed, then deliver in order — a partition
 *   the TCP connections survive (the server keeps the worker's locks meanwhile);
 * - `delay`: deliver each chunk `delayMs` after it arrived, in order.
 */
const net = require('net');

class Link {
  /** @param {net.Socket} to @param {ChaosProxy} proxy */
  constructor(to, proxy) {
    this.to = to;
    this.proxy = proxy;
    /** @type {{ due: number, chunk: Buffer }[]} */
    this.queue = [];
    /** @type {NodeJS.Timeout | undefined} */
    this.timer = undefined;
  }

  /** @param {Buffer} chunk */
  push(chunk) {
    const last = this.queue.length ? this.queue[this.queue.length - 1].due : 0;
    this.queue.push({ due: Math.max(Date.now() + this.proxy.delayMs, last), chunk });
    this.pump();
  }

  pump() {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.proxy.mode === 'hang') return;
    const now = Date.now();
    while (this.queue.length && (this.queue[0].due <= now || this.proxy.delayMs === 0)) {
      const { chunk } = /** @type {{ chunk: Buffer }} */ (this.queue.shift());
      if (!this.to.destroyed) this.to.write(chunk);
    }
    if (this.queue.length) this.timer = setTimeout(() => this.pump(), Math.max(1, this.queue[0].due - now));
  }

  clear() {
    clearTimeout(this.timer);
    this.queue = [];
  }
}

class ChaosProxy {
  /** @param {{ targetHost: string, targetPort: number, name: string }} options */
  constructor({ targetHost, targetPort, name }) {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
    this.name = name;
    /** @type {'pass' | 'cut' | 'hang'} */
    this.mode = 'pass';
    this.delayMs = 0;
    /** @type {Set<{ client: net.Socket, upstream: net.Socket, links: Link[] }>} */
    this.pairs = new Set();
    this.server = net.createServer((client) => this.#accept(client));
    this.port = 0;
  }

  /** @returns {Promise<number>} the port it listens on (127.0.0.1) */
  listen() {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        this.port = /** @type {net.AddressInfo} */ (this.server.address()).port;
        resolve(this.port);
      });
    });
  }

  /** @param {net.Socket} client */
  #accept(client) {
    if (this.mode === 'cut') {
      client.destroy();
      return;
    }
    client.setNoDelay(true);
    const upstream = net.connect({ host: this.targetHost, port: this.targetPort });
    upstream.setNoDelay(true);
    const toServer = new Link(upstream, this);
    const toClient = new Link(client, this);
    const pair = { client, upstream, links: [toServer, toClient] };
    this.pairs.add(pair);
    client.on('data', (chunk) => toServer.push(chunk));
    upstream.on('data', (chunk) => toClient.push(chunk));
    const close = () => {
      if (!this.pairs.delete(pair)) return;
      for (const link of pair.links) link.clear();
      client.destroy();
      upstream.destroy();
    };
    // A closed end closes the other at once, even while hanging: a crashed worker's connection
    // must end on the server too (that is what rolls back its transaction).
    for (const socket of [client, upstream]) {
      socket.on('close', close);
      socket.on('error', close);
    }
  }

  /** Local ports of the proxy's connections to the database: how the server sees this worker. */
  upstreamPorts() {
    return [...this.pairs].map((p) => p.upstream.localPort).filter((port) => typeof port === 'number');
  }

  cut() {
    this.mode = 'cut';
    for (const pair of [...this.pairs]) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
  }

  hang() {
    this.mode = 'hang';
  }

  /** @param {number} ms */
  delay(ms) {
    this.delayMs = ms;
  }

  /**
   * Sends new connections to another server (a promoted standby) and closes the current ones, as
   * a failover's virtual IP or DNS switch does.
   * @param {string} host @param {number} port
   */
  retarget(host, port) {
    this.cut();
    this.targetHost = host;
    this.targetPort = port;
    this.heal();
  }

  heal() {
    this.mode = 'pass';
    this.delayMs = 0;
    for (const pair of this.pairs) for (const link of pair.links) link.pump();
  }

  close() {
    this.heal();
    for (const pair of [...this.pairs]) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    return new Promise((resolve) => this.server.close(() => resolve(undefined)));
  }
}

module.exports = { ChaosProxy };
