/**
 * `gemstone-election demo --metrics-port`: while the demo runs, its endpoint serves every
 * worker's election metrics as Prometheus text (one series per worker); exactly one worker leads
 * and every worker's term is the leader row's. A port in use is refused before anything starts.
 */
import * as net from 'net';
import { describeEachDatabase, query } from '../support/databases';
import { parsePrometheusText, Sample } from '../metrics/read';
import { waitFor } from '../elector/helpers';
import { finished, runCli, startCli } from './cli';

const NS = 'demo-metrics';
const WORKERS = 3;

const sum = (samples: Sample[], name: string) => samples.filter((s) => s.name === name).reduce((total, s) => total + s.value, 0);

describeEachDatabase(
  'gemstone-election demo --metrics-port',
  (db) => {
    test('the endpoint serves each worker\'s metrics: is_leader sums to 1, every term is the leader row\'s, elections and ticks counted', async () => {
      const ds = await db.connect();
      const child = startCli(['demo', '--plain', '--duration', '15', '--lease', '2', '--ns', NS, '--metrics-port', '0', '--url', db.url()]);
      const result = finished(child, 80_000);
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      try {
        await waitFor('the metrics URL and a leader', () => /became leader/.test(stdout) && /metrics: http:\/\/127\.0\.0\.1:\d+\/metrics/.test(stdout), 20_000, 50);
        const url = /metrics: (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(stdout)![1]!;
        let samples: Sample[] = [];
        let response: Response | undefined;
        await waitFor(
          'every worker in the scrape, one of them leading',
          async () => {
            response = await fetch(url);
            samples = parsePrometheusText(await response.text());
            const workers = new Set(samples.filter((s) => s.name === 'gemstone_election_is_leader').map((s) => s.labels.worker));
            return workers.size === WORKERS && sum(samples, 'gemstone_election_is_leader') === 1;
          },
          15_000,
          200,
        );
        expect(response!.status).toBe(200);
        expect(response!.headers.get('content-type')).toMatch(/^text\/plain/);
        const [row] = await query<{ term: unknown; leader_id: string }>(ds, 'SELECT term, leader_id FROM gemstone_election_leader WHERE ns = ?', [NS]);
        const leaders = samples.filter((s) => s.name === 'gemstone_election_is_leader');
        expect(leaders.map((s) => s.labels)).toEqual(
          expect.arrayContaining(['worker-1', 'worker-2', 'worker-3'].map((worker) => ({ ns: NS, worker }))),
        );
        expect(leaders.filter((s) => s.value === 1)).toHaveLength(1);
        const terms = samples.filter((s) => s.name === 'gemstone_election_term');
        expect(terms).toHaveLength(WORKERS);
        for (const term of terms) expect(term.value).toBe(Number(row!.term));
        // No chaos: the one election of this fresh namespace.
        expect(Number(row!.term)).toBe(1);
        expect(sum(samples.filter((s) => s.labels.reason === 'elected'), 'gemstone_election_transitions_total')).toBe(1);
        expect(sum(samples, 'gemstone_election_elect_errors_total')).toBe(0);
        expect(sum(samples, 'gemstone_election_elect_duration_seconds_count')).toBeGreaterThanOrEqual(WORKERS);
        expect(samples.filter((s) => s.name === 'gemstone_election_db_clock_skew_seconds')).toHaveLength(WORKERS);
        expect((await fetch(url.replace(/\/metrics$/, '/other'))).status).toBe(404);
      } finally {
        const { code, stdout: all, stderr } = await result;
        if (code !== 0) throw new Error(`demo exited with ${code}:\n${all}\n${stderr}`);
      }
      // The endpoint closes with the demo.
      await expect(fetch(/metrics: (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(stdout)![1]!)).rejects.toThrow();
    }, 90_000);
  },
  { sharedOnly: true },
);

describeEachDatabase(
  'gemstone-election demo --metrics-port refusals',
  (db) => {
    test('a port in use: the demo says so and exits before starting a worker', async () => {
      const blocker = net.createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const port = (blocker.address() as net.AddressInfo).port;
      try {
        const result = await runCli(['demo', '--plain', '--duration', '5', '--metrics-port', String(port), '--url', db.url()], { timeoutMs: 30_000 });
        expect(result.code).not.toBe(0);
        expect(result.stderr).toMatch(new RegExp(`--metrics-port ${port}: the port is already in use`));
        expect(result.stdout).not.toMatch(/worker-1 started/);
      } finally {
        await new Promise<void>((resolve) => blocker.close(() => resolve()));
      }
    });

    test('--metrics-port must be a port number', async () => {
      const result = await runCli(['demo', '--metrics-port', '70000', '--url', db.url()], { timeoutMs: 30_000 });
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/--metrics-port.*a TCP port from 0 \(any free one\) to 65535/);
    });
  },
  { kinds: ['sqlite'], sharedOnly: true },
);
