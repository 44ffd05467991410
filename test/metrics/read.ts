/**
 * Reading metrics back as a monitoring system would: Prometheus text exposition parsed into
 * samples, and an OpenTelemetry SDK reader's collection flattened to the same shape.
 */
import { MeterProvider, MetricReader, DataPointType } from '@opentelemetry/sdk-metrics';

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

/** An SDK MeterProvider whose metrics the test collects on demand, flattened to Prometheus-like samples. */
export function openTelemetrySdk() {
  const reader = new CollectingReader();
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
