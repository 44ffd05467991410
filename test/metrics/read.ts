/**
 * Reading metrics back as a monitoring system would: Prometheus text exposition parsed into
 * samples, and an OpenTelemetry SDK reader's collection flattened to the same shape; and the
 * per-test set-up of the metrics tests (a registry and an SDK, both observing the electors).
 */
import type { DataSource } from 'typeorm';
import { Registry } from 'prom-client';
import { AggregationTemporality, MeterProvider, MetricReader, DataPointType } from '@opentelemetry/sdk-metrics';
import { LeaderElector } from 'gemstone-utils';
import { createOpenTelemetryMetrics, createPrometheusMetrics, ElectorMetrics } from 'gemstone-utils/metrics';
import type { TestDatabase } from '../support/databases';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus text format (what `registry.metrics()` and a /metrics endpoint return). */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]!] = pair[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels`; undefined if none. */
export function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

class CollectingReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/**
 * An SDK MeterProvider whose metrics the test collects on demand, flattened to Prometheus-like
 * samples. `temporality` 'cumulative' (the SDK's default) or 'delta' (a gauge's series is in a
 * collection only if the callback reported it for that collection).
 */
export function openTelemetrySdk(temporality: 'cumulative' | 'delta' = 'cumulative') {
  const chosen = temporality === 'delta' ? AggregationTemporality.DELTA : AggregationTemporality.CUMULATIVE;
  const reader = new CollectingReader({ aggregationTemporalitySelector: () => chosen });
  const provider = new MeterProvider({ readers: [reader] });
  return {
    meter: provider.getMeter('gemstone-utils-test'),
    async collect(): Promise<Sample[]> {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw errors[0];
      const samples: Sample[] = [];
      for (const scope of resourceMetrics.scopeMetrics) {
        for (const metric of scope.metrics) {
          const name = metric.descriptor.name;
          for (const point of metric.dataPoints) {
            const labels = Object.fromEntries(Object.entries(point.attributes).map(([k, v]) => [k, String(v)]));
            if (metric.dataPointType === DataPointType.HISTOGRAM) {
              const h = point.value as { count: number; sum?: number; buckets: { boundaries: number[]; counts: number[] } };
              samples.push({ name: `${name}_count`, labels, value: h.count });
              samples.push({ name: `${name}_sum`, labels, value: h.sum ?? NaN });
              let cumulative = 0;
              h.buckets.counts.forEach((count, i) => {
                cumulative += count;
                const le = i < h.buckets.boundaries.length ? String(h.buckets.boundaries[i]) : '+Inf';
                samples.push({ name: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
              });
            } else {
              samples.push({ name, labels, value: point.value as number });
            }
          }
        }
      }
      return samples;
    },
    shutdown: () => provider.shutdown(),
  };
}

/**
 * Registers the hooks of a metrics test on `db`: before each test a fresh prom-client registry and
 * OpenTelemetry SDK, each with a metrics object; after it, the electors made by `elector` are
 * stopped and every metrics object (including ones the test pushed to `metrics`) closed.
 */
export function metricsFixture(db: TestDatabase, expireSeconds: number, intervalMs: number) {
  let ds: DataSource;
  let registry: Registry;
  let otel: ReturnType<typeof openTelemetrySdk>;
  let metrics: ElectorMetrics[];
  const electors: LeaderElector[] = [];

  beforeAll(async () => {
    ds = await db.connect();
  });
  beforeEach(() => {
    registry = new Registry();
    otel = openTelemetrySdk();
    metrics = [createPrometheusMetrics({ registry }), createOpenTelemetryMetrics(otel.meter)];
  });
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop()));
    for (const m of metrics) m.close();
    await otel.shutdown();
  });

  return {
    get ds(): DataSource {
      return ds;
    },
    get registry(): Registry {
      return registry;
    },
    /** The metrics objects every new elector is attached to: [prom-client, OpenTelemetry, …pushed]. */
    get metrics(): ElectorMetrics[] {
      return metrics;
    },
    /** An elector attached to every metrics object, stopped after the test; its errors are left to the metrics. */
    elector(ns: string, dataSource: DataSource = ds): LeaderElector {
      const e = new LeaderElector({ dataSource, ns, expireSeconds, intervalMs });
      e.on('error', () => undefined); // counted by the metrics; the tests assert them there
      for (const m of metrics) m.attach(e);
      electors.push(e);
      return e;
    },
    /** Both libraries' samples: every assertion runs on each. */
    async scrape(): Promise<{ library: string; samples: Sample[] }[]> {
      return [
        { library: 'prom-client', samples: parsePrometheusText(await registry.metrics()) },
        { library: 'OpenTelemetry', samples: await otel.collect() },
      ];
    },
  };
}
