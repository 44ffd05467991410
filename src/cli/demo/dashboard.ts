/**
 * `demo --dashboard`: the dashboard on the demo's own database, on loopback, so a new user can
 * watch the leader change on every failover and the timeline fill in.
 */
import type { DataSource } from 'typeorm';
import { DEFAULT_DASHBOARD_PORT, serveDashboard } from '../../dashboard/server';
import { listenError } from '../dashboard/command';
import { oneLine } from '../errors';
import { DEMO_DASHBOARD_POLL_MS, DEMO_DASHBOARD_WINDOW_SECONDS } from './options';

export interface DashboardServer {
  /** `http://127.0.0.1:<port>/`. */
  readonly url: string;
  /** The page of one namespace, with the demo's timeline window. */
  pageOf(ns: string): string;
  close(): Promise<void>;
}

const HOST = '127.0.0.1';

/** Serves the dashboard; `true`: on the default port, or any free one when that is taken. */
export async function serveDemoDashboard(dataSource: DataSource, port: true | number): Promise<DashboardServer> {
  const serve = (p: number) =>
    serveDashboard({
      dataSource,
      port: p,
      host: HOST,
      pollMs: DEMO_DASHBOARD_POLL_MS,
      onError: (error) => process.stderr.write(`gemstone-election: dashboard: ${oneLine(error)}\n`),
    });
  const wanted = port === true ? DEFAULT_DASHBOARD_PORT : port;
  let server;
  try {
    server = await serve(wanted);
  } catch (error) {
    if (port !== true || (error as NodeJS.ErrnoException)?.code !== 'EADDRINUSE') throw listenError(error, wanted, HOST);
    server = await serve(0).catch((again: unknown) => {
      throw listenError(again, 0, HOST);
    });
  }
  const { url } = server;
  return {
    url,
    pageOf: (ns) => `${url}#/ns/${encodeURIComponent(ns)}?window=${DEMO_DASHBOARD_WINDOW_SECONDS}`,
    close: () => server.close(),
  };
}
