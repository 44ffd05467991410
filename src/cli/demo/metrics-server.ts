/**
 * `demo --metrics-port`: one Prometheus endpoint for the whole demo. The workers are separate
 * processes, each with its own prom-client registry; on every scrape the supervisor asks each
 * running worker for its metrics over IPC, adds a `worker` label (its name: `worker-1`, `worker-1.2`
 * for the process started in its place, …) to every series,
 * and serves them merged. So `sum by (ns) (gemstone_election_is_leader)` counts the leaders
 * across the workers, as it would across the targets of a real deployment. A killed worker's
 * series vanish with it (its replacement's start from zero, under its own name).
 */
import * as http from 'http';
import type { AddressInfo } from 'net';
import { CliError } from '../errors';

/** One worker's answer: prom-client `registry.getMetricsAsJSON()`. */
export interface WorkerMetrics {
  worker: string;
  metrics: object[];
}

export interface MetricsServer {
  /** `http://127.0.0.1:<port>/metrics`. */
  readonly url: string;
  close(): Promise<void>;
}

type PromClient = typeof import('prom-client');

function promClient(): PromClient {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('prom-client') as PromClient;
  } catch {
    throw new CliError('--metrics-port needs the optional package prom-client: npm install prom-client');
  }
}

/** Every value of every metric labelled with its worker. */
function labelled({ worker, metrics }: WorkerMetrics): object[] {
  return metrics.map((metric) => {
    const m = metric as { values?: { labels?: Record<string, unknown> }[] };
    return { ...m, values: (m.values ?? []).map((value) => ({ ...value, labels: { ...value.labels, worker } })) };
  });
}

/** Starts the endpoint on 127.0.0.1 (port 0: any free port); `collect` gathers the workers' metrics per scrape. */
export async function serveDemoMetrics(port: number, collect: () => Promise<WorkerMetrics[]>): Promise<MetricsServer> {
  const client = promClient();
  const server = http.createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    collect()
      .then(async (answers) => {
        const merged = client.AggregatorRegistry.aggregate(answers.map(labelled));
        const text = await merged.metrics();
        response.writeHead(200, { 'content-type': merged.contentType }).end(text);
      })
      .catch((error: unknown) => {
        response.writeHead(500, { 'content-type': 'text/plain' }).end(`${error instanceof Error ? error.message : String(error)}\n`);
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new CliError(`--metrics-port ${port}: the port is already in use`) : error),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
