/**
 * prom-client and @opentelemetry/api are optional peers: `gemstone-utils` and
 * `gemstone-utils/election` never load them, `gemstone-utils/metrics` loads prom-client only when
 * Prometheus metrics are created, and never needs @opentelemetry/api (the Meter is the caller's).
 * Child processes in the repo root, with the packages made unresolvable for this package's code
 * as if not installed (prom-client 15 brings @opentelemetry/api as its own dependency: that one
 * still resolves for prom-client).
 */
import { runNode } from '../support/children/spawn';

interface PeersProbe {
  afterCore: string[];
  afterImport: string[];
  afterPrometheus: string[];
  attempts: string[];
  prometheus: { ok: boolean; names?: string[]; error?: string };
}

async function probe(absent: string[]): Promise<PeersProbe> {
  const result = await runNode(['test/support/children/metrics-peers-probe.js', absent.join(',')]);
  if (result.code !== 0) throw new Error(`probe exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

describe('metrics peers are optional (child processes)', () => {
  test('neither installed: every entry point imports; Prometheus metrics say which package to install', async () => {
    const result = await probe(['prom-client', '@opentelemetry/api']);
    expect(result).toEqual({
      afterCore: [],
      afterImport: [],
      afterPrometheus: [],
      attempts: ['prom-client'],
      prometheus: { ok: false, error: expect.stringMatching(/^GemstoneError: .*need the optional peer dependency prom-client \(npm install prom-client\)/) },
    });
  });

  test('prom-client without @opentelemetry/api: Prometheus metrics work, nothing of OpenTelemetry is loaded', async () => {
    const result = await probe(['@opentelemetry/api', '@opentelemetry/sdk-metrics']);
    expect(result.afterCore).toEqual([]);
    expect(result.afterImport).toEqual([]);
    expect(result.afterPrometheus).toContain('prom-client');
    expect(result.attempts).toEqual([]); // this package never asked for OpenTelemetry
    expect(result.prometheus).toEqual({
      ok: true,
      names: [
        'gemstone_election_db_clock_skew_error_seconds',
        'gemstone_election_db_clock_skew_seconds',
        'gemstone_election_elect_duration_seconds',
        'gemstone_election_elect_errors_total',
        'gemstone_election_is_leader',
        'gemstone_election_schedule_duration_seconds',
        'gemstone_election_schedule_last_success_timestamp_seconds',
        'gemstone_election_schedule_runs_total',
        'gemstone_election_term',
        'gemstone_election_transitions_total',
      ],
    });
  });

  test('both installed: importing the core entry points still loads neither', async () => {
    const result = await probe([]);
    expect(result.afterCore).toEqual([]);
    expect(result.afterImport).toEqual([]);
  });
});
