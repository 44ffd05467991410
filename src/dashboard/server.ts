/// <reference types="node" preserve="true" />
import * as http from 'http';
import type { AddressInfo } from 'net';
import { shown as shownValue, ValidationError } from '../errors';
import { createDashboard, Dashboard } from './handler';
import { sendError } from './http';
import type { DashboardOptions } from './options';

/** The port `gemstone-election dashboard` listens on unless told otherwise. */
export const DEFAULT_DASHBOARD_PORT = 8080;
/** The address it listens on unless told otherwise: loopback only. */
export const DEFAULT_DASHBOARD_HOST = '127.0.0.1';

/** Options of {@link serveDashboard}: the dashboard's own (without `basePath`: it is served at the root) and its server's. */
export interface DashboardServerOptions extends Omit<DashboardOptions, 'basePath'> {
  /** TCP port; 0 picks a free one. Default {@link DEFAULT_DASHBOARD_PORT}. */
  readonly port?: number;
  /** Address to listen on. Default {@link DEFAULT_DASHBOARD_HOST}. */
  readonly host?: string;
  /** Receives the warning about a non-loopback address. Default: written to stderr. */
  readonly warn?: (message: string) => void;
}

/** A dashboard on an HTTP server of its own, as {@link serveDashboard} started it. */
export interface DashboardServer {
  /** `http://<host>:<port>/`. */
  readonly url: string;
  /** The address it listens on. */
  readonly host: string;
  /** The port it listens on (the one picked when 0 was asked for). */
  readonly port: number;
  /** The request handler it serves. */
  readonly dashboard: Dashboard;
  /** Closes the dashboard (its streams end), then the server and its connections. */
  close(): Promise<void>;
}

/** Whether an address only this machine reaches. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare) || bare === '::ffff:127.0.0.1';
}

/** The warning a non-loopback address gets: what anyone who reaches it sees, and what to do instead. */
export function exposureWarning(host: string): string {
  return (
    `the dashboard listens on ${host}, not only on loopback: anyone who can reach that address sees every namespace, ` +
    'leader and candidate metadata (host names, process ids, versions). It has no login of its own: put it behind an ' +
    'authenticating proxy or firewall, or listen on 127.0.0.1 and reach it through an SSH tunnel.'
  );
}

/** The Host header names the loopback listener itself: a page of another site that rebinds its DNS to 127.0.0.1 is refused. */
function hostHeaderIsLoopback(request: http.IncomingMessage): boolean {
  const header = request.headers.host;
  if (!header) return false;
  const name = header.startsWith('[') ? header.slice(0, header.indexOf(']') + 1) : header.replace(/:\d+$/, '');
  return isLoopback(name);
}

/**
 * Serves the dashboard on its own HTTP server (what `gemstone-election dashboard` and the demo
 * run). Listening on anything but loopback is allowed, with a warning (see {@link exposureWarning});
 * on loopback, requests must name a loopback host (DNS rebinding).
 */
export async function serveDashboard(options: DashboardServerOptions = {}): Promise<DashboardServer> {
  const { port = DEFAULT_DASHBOARD_PORT, host = DEFAULT_DASHBOARD_HOST, warn, ...dashboardOptions } = options;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new ValidationError('options.port', `must be a TCP port from 0 (any free one) to 65535 (got ${shownValue(port)})`);
  }
  if (typeof host !== 'string' || host === '') throw new ValidationError('options.host', 'must be a host name or address');
  if (warn !== undefined && typeof warn !== 'function') throw new ValidationError('options.warn', 'must be a function');
  const dashboard = createDashboard(dashboardOptions);
  const loopback = isLoopback(host);
  if (!loopback) (warn ?? ((message: string) => process.stderr.write(`gemstone-election: warning: ${message}\n`)))(exposureWarning(host));
  const server = http.createServer((request, response) => {
    if (loopback && !hostHeaderIsLoopback(request)) return sendError(response, 403, 'this dashboard answers to loopback host names only');
    dashboard(request, response);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await dashboard.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' || address.address.includes(':') ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shown}:${address.port}/`,
    host: address.address,
    port: address.port,
    dashboard,
    close: () =>
      (closing ??= (async () => {
        await dashboard.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      })()),
  };
}
