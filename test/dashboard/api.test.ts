/**
 * The dashboard's JSON on every database: the overview (filter, sort, paging, totals and health by
 * the database clock), a namespace's leader and candidates, timelines over a window from the
 * history table, the bounds on every query, and the HTTP around them (methods, redirects,
 * authorization, security headers, a mount path).
 */
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { createDashboard, CONTENT_SECURITY_POLICY, MAX_TIMELINE_TERMS, type Dashboard } from 'gemstone-utils/dashboard';
import { describeEachDatabase, sleep, uuid } from '../support/databases';
import { getJson, serve, serveDashboard, Served } from './support/http';
import { ageTerm, insertTerms } from './support/sql';

interface Row {
  ns: string;
  leaderId: string | null;
  term: number | null;
  live: boolean;
  leaseLeftMs: number | null;
  leaseMs: number | null;
  candidates: number;
  recentTerms: number;
  vacant: boolean;
  expiring: boolean;
  flapping: boolean;
  leaderMetadata: Record<string, unknown> | null;
}
interface Overview {
  dbNow: number;
  total: number;
  vacant: number;
  flapping: number;
  rows: Row[];
}
interface Term {
  ns: string;
  term: number;
  leaderId: string;
  acquiredAt: number;
  endedAt: number | null;
  endReason: string | null;
  metadata: Record<string, unknown> | null;
}
interface Timeline {
  dbNow: number;
  since: number;
  terms: Term[];
  truncated: boolean;
}

const WORDS = ['alpha', 'beta', 'expiring', 'flappy', 'lonely'];
const ALL = [...WORDS, 'ALPHA-UPPER', 'per%cent', 'under_score', 'ancient', 'crowded'];

describeEachDatabase('dashboard JSON', (db) => {
  let ds: DataSource;
  let dashboard: Dashboard;
  let served: Served;
  const [a, b, c] = [uuid(), uuid(), uuid()];
  const get = <T = Overview>(path: string) => getJson<T>(`${served.url}${path}`);
  const rowsOf = async (path: string) => (await get(path)).body.rows;

  beforeAll(async () => {
    ds = await db.connect();
    const service = new ElectionService(ds);
    await service.registerCandidate(b, { ns: 'alpha', priority: 5, eligible: false, metadata: { host: 'web-b', pid: 2 } });
    await service.elect(a, { ns: 'alpha', metadata: { host: 'web-a', pid: 1, version: '1.2.3' } });
    await service.elect(a, { ns: 'beta' });
    await service.resign(a, { ns: 'beta' });
    for (const id of [a, b, a]) {
      await service.elect(id, { ns: 'flappy' });
      await service.resign(id, { ns: 'flappy' });
    }
    await service.elect(c, { ns: 'flappy' });
    await service.registerCandidate(c, { ns: 'lonely' });
    for (const ns of ['ALPHA-UPPER', 'per%cent', 'under_score', 'ancient']) await service.elect(a, { ns });
    await service.resign(a, { ns: 'ancient' });
    await service.elect(b, { ns: 'ancient' });
    // Term 1 of `ancient` ran two hours ago: outside a one-hour window, inside a three-hour one.
    await ageTerm(ds, 'ancient', 1, 7300, 7200);
    await insertTerms(ds, 'crowded', c, MAX_TIMELINE_TERMS + 1);
    await service.registerCandidate(c, { ns: 'crowded' });
    await new ElectionService(ds, { expireSeconds: 4 }).elect(a, { ns: 'expiring' });
    dashboard = createDashboard({ dataSource: ds, onError: () => undefined });
    served = await serveDashboard(dashboard);
    // Less than half of the 4 s lease is left from 2 s on.
    await sleep(2_300);
  });

  afterAll(async () => {
    await served?.close();
  });

  test('the overview lists every namespace with its leader, term, lease by the database clock, candidates and health', async () => {
    const { status, body, headers } = await get('/api/overview?limit=500');
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(headers.get('cache-control')).toBe('no-store');
    expect(body.rows.map((r) => r.ns).sort()).toEqual([...ALL].sort());
    expect(body.total).toBe(ALL.length);
    const byNs = new Map(body.rows.map((r) => [r.ns, r]));
    const alpha = byNs.get('alpha')!;
    expect(alpha).toMatchObject({ leaderId: a, term: 1, live: true, candidates: 2, vacant: false, expiring: false, flapping: false, leaseMs: 60_000 });
    expect(alpha.leaderMetadata).toEqual({ host: 'web-a', pid: 1, version: '1.2.3' });
    expect(alpha.leaseLeftMs).toBeGreaterThan(50_000);
    expect(alpha.leaseLeftMs).toBeLessThanOrEqual(60_000);
    expect(byNs.get('beta')).toMatchObject({ leaderId: null, term: 1, live: false, vacant: true, leaseLeftMs: null, recentTerms: 1 });
    expect(byNs.get('lonely')).toMatchObject({ leaderId: null, term: null, vacant: true, candidates: 1 });
    expect(byNs.get('flappy')).toMatchObject({ leaderId: c, term: 4, recentTerms: 3, flapping: true, vacant: false });
    expect(byNs.get('expiring')).toMatchObject({ leaderId: a, live: true, expiring: true, leaseMs: 4_000 });
    expect(byNs.get('expiring')!.leaseLeftMs).toBeLessThan(2_000);
    // Only history and a candidate: no leader row; its last ~600 terms ended within the ten-minute flap window.
    const crowded = byNs.get('crowded')!;
    expect(crowded).toMatchObject({ term: null, vacant: true, candidates: 1, flapping: true });
    expect(crowded.recentTerms).toBeGreaterThan(580);
    expect(crowded.recentTerms).toBeLessThanOrEqual(600);
    expect(body).toMatchObject({ vacant: 3, flapping: 2 });
  });

  test('the filter matches a part of the name ignoring case, and % and _ only as themselves', async () => {
    expect((await rowsOf('/api/overview?q=ALPHA')).map((r) => r.ns).sort()).toEqual(['ALPHA-UPPER', 'alpha'].sort());
    expect((await rowsOf('/api/overview?q=%25')).map((r) => r.ns)).toEqual(['per%cent']);
    expect((await rowsOf('/api/overview?q=_')).map((r) => r.ns)).toEqual(['under_score']);
    const none = await get('/api/overview?q=nothing-like-this');
    expect(none.body).toMatchObject({ total: 0, vacant: 0, flapping: 0, rows: [] });
    expect((await get('/api/overview?q=a')).body.total).toBe(ALL.filter((ns) => ns.toLowerCase().includes('a')).length);
  });

  test('sorting: by name, by term, problems first; pages split one order without overlap', async () => {
    const words = (rows: Row[]) => rows.map((r) => r.ns).filter((ns) => WORDS.includes(ns));
    expect(words(await rowsOf('/api/overview?limit=500'))).toEqual(WORDS);
    expect(words(await rowsOf('/api/overview?limit=500&dir=desc'))).toEqual([...WORDS].reverse());
    const byTerm = await rowsOf('/api/overview?sort=term&dir=desc&limit=2');
    expect(byTerm.map((r) => r.ns)).toEqual(['flappy', 'ancient']);
    // Vacant first, flapping first among them, then the earliest lease end; the first live one is the flapping one.
    const health = await rowsOf('/api/overview?sort=health&limit=500');
    expect(health.slice(0, 3).map((r) => r.ns)).toEqual(['crowded', 'beta', 'lonely']);
    expect(health.find((r) => r.live)?.ns).toBe('flappy');
    const candidates = await rowsOf('/api/overview?sort=candidates&dir=desc&limit=2');
    expect(candidates.map((r) => [r.ns, r.candidates])).toEqual([
      ['flappy', 3],
      ['alpha', 2],
    ]);
    const all = (await rowsOf('/api/overview?sort=lease&limit=500')).map((r) => r.ns);
    const pages = [];
    for (let offset = 0; offset < all.length; offset += 3) pages.push(...(await rowsOf(`/api/overview?sort=lease&limit=3&offset=${offset}`)).map((r) => r.ns));
    expect(pages).toEqual(all);
    // Vacant first (no lease end first), then the soonest end: `expiring`'s 4 s lease, run out or not.
    expect(all.slice(0, 3)).toEqual(['beta', 'crowded', 'lonely']);
    expect(all[3]).toBe('expiring');
  });

  test('a namespace: its leader row and health, and its active candidates with heartbeat age, priority, eligibility and metadata', async () => {
    const { status, body } = await get<{ ns: string; summary: Row; candidates: Record<string, unknown>[]; candidatesTruncated: boolean }>('/api/namespace?ns=alpha');
    expect(status).toBe(200);
    expect(body.summary).toMatchObject({ ns: 'alpha', leaderId: a, term: 1, live: true });
    expect(body.candidatesTruncated).toBe(false);
    const sorted = [a, b].sort();
    expect(body.candidates.map((x) => x.candidateId)).toEqual(sorted);
    const byId = new Map(body.candidates.map((x) => [x.candidateId, x]));
    expect(byId.get(a)).toMatchObject({ leader: true, priority: 0, eligible: true, metadata: { host: 'web-a', pid: 1, version: '1.2.3' } });
    expect(byId.get(b)).toMatchObject({ leader: false, priority: 5, eligible: false, metadata: { host: 'web-b', pid: 2 } });
    for (const candidate of body.candidates) {
      expect(candidate.heartbeatAgeMs).toBeGreaterThanOrEqual(0);
      expect(candidate.heartbeatAgeMs).toBeLessThan(60_000);
      expect(candidate.expiresInMs).toBeGreaterThan(0);
    }
    const unknown = await get<{ summary: unknown; candidates: unknown[] }>('/api/namespace?ns=never-seen');
    expect(unknown.status).toBe(200);
    expect(unknown.body).toMatchObject({ summary: null, candidates: [] });
  });

  test('a timeline holds the terms that overlap the window, newest first, with why each ended', async () => {
    const { body } = await get<Timeline>('/api/namespace/timeline?ns=flappy&window=600');
    expect(body.terms.map((t) => [t.term, t.endReason])).toEqual([
      [4, null],
      [3, 'resigned'],
      [2, 'resigned'],
      [1, 'resigned'],
    ]);
    expect(body.terms.map((t) => t.leaderId)).toEqual([c, a, b, a]);
    expect(body.since).toBe(body.dbNow - 600_000);
    for (const term of body.terms) expect(term.acquiredAt).toBeLessThanOrEqual(body.dbNow);
    expect(body.truncated).toBe(false);
    const hour = await get<Timeline>('/api/namespace/timeline?ns=ancient&window=3600');
    expect(hour.body.terms.map((t) => t.term)).toEqual([2]);
    const three = await get<Timeline>('/api/namespace/timeline?ns=ancient&window=10800');
    expect(three.body.terms.map((t) => t.term)).toEqual([2, 1]);
    expect(three.body.terms[1]!.endedAt).toBeLessThan(three.body.dbNow - 7_000_000);
  });

  test(`a timeline reads at most ${MAX_TIMELINE_TERMS} terms, and says when it left older ones out`, async () => {
    const { body } = await get<Timeline>('/api/namespace/timeline?ns=crowded&window=86400');
    expect(body.terms).toHaveLength(MAX_TIMELINE_TERMS);
    expect(body.truncated).toBe(true);
    expect(body.terms[0]!.term).toBe(MAX_TIMELINE_TERMS + 1);
    expect(body.terms[MAX_TIMELINE_TERMS - 1]!.term).toBe(2);
  });

  test("the overview's timeline holds the terms of the page's namespaces only", async () => {
    const { body } = await get<Timeline & { namespaces: string[] }>('/api/overview/timeline?q=a&sort=ns&limit=3&window=600');
    const page = (await rowsOf('/api/overview?q=a&sort=ns&limit=3')).map((r) => r.ns);
    expect(body.namespaces).toEqual(page);
    expect(page).toHaveLength(3);
    // Every namespace with an `a` has a term in the last ten minutes.
    expect(new Set(body.terms.map((t) => t.ns))).toEqual(new Set(page));
  });

  test.each([
    ['/api/overview?limit=0', 'limit'],
    ['/api/overview?limit=501', 'limit'],
    ['/api/overview?offset=-1', 'offset'],
    ['/api/overview?offset=1000001', 'offset'],
    ['/api/overview?sort=leader_id', 'sort'],
    ['/api/overview?dir=sideways', 'dir'],
    [`/api/overview?q=${'x'.repeat(256)}`, 'q'],
    ['/api/overview?q=a&q=b', 'q'],
    ['/api/namespace', 'ns'],
    ['/api/namespace?ns=', 'ns'],
    ['/api/namespace/timeline?ns=alpha&window=59', 'window'],
    [`/api/namespace/timeline?ns=alpha&window=${31 * 86_400 + 1}`, 'window'],
    ['/api/overview/timeline?window=1e9', 'window'],
    ['/api/namespace/events', 'ns'],
  ])('%s is refused with 400 naming %s', async (path, parameter) => {
    const { status, body } = await get<{ error: string; parameter: string }>(path);
    expect(status).toBe(400);
    expect(body.parameter).toBe(parameter);
    expect(body.error).toMatch(new RegExp(`^${parameter} `));
  });

  test('the page, its stylesheet and scripts, with a strict content security policy; nothing else is served', async () => {
    const page = await fetch(`${served.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).toContain("require-trusted-types-for 'script'");
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).toContain('<script type="module" src="client/main.js"></script>');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    expect(html).not.toMatch(/\son[a-z]+=/i); // no inline handler
    for (const [path, type] of [
      ['/style.css', 'text/css; charset=utf-8'],
      ['/client/main.js', 'text/javascript; charset=utf-8'],
      ['/client/dom.js', 'text/javascript; charset=utf-8'],
      ['/favicon.svg', 'image/svg+xml'],
    ]) {
      const response = await fetch(`${served.url}${path}`);
      expect({ path, status: response.status, type: response.headers.get('content-type') }).toEqual({ path, status: 200, type });
    }
    for (const path of ['/client/../handler.js', '/client/main.ts', '/api', '/api/overview/x', '/index.html', '/%2e%2e/package.json']) {
      expect({ path, status: (await fetch(`${served.url}${path}`)).status }).toEqual({ path, status: 404 });
    }
    const head = await fetch(`${served.url}/api/overview`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const response = await fetch(`${served.url}/api/overview`, { method });
      expect({ method, status: response.status, allow: response.headers.get('allow') }).toEqual({ method, status: 405, allow: 'GET, HEAD' });
    }
  });
});

describeEachDatabase(
  'dashboard HTTP: mount path, redirect, authorization',
  (db) => {
    let ds: DataSource;
    beforeAll(async () => {
      ds = await db.connect();
      await new ElectionService(ds).elect(uuid(), { ns: 'jobs' });
    });

    test('under basePath only its paths are served; the mount point redirects to itself with a slash, relatively', async () => {
      const dashboard = createDashboard({ dataSource: ds, basePath: '/ops/election/' });
      const served = await serve((request, response) => dashboard(request, response, () => response.writeHead(418).end('app')));
      try {
        const redirect = await fetch(`${served.url}/ops/election?x=1`, { redirect: 'manual' });
        expect(redirect.status).toBe(308);
        expect(redirect.headers.get('location')).toBe('./election/?x=1');
        const page = await fetch(`${served.url}/ops/election?x=1`);
        expect(page.url).toBe(`${served.url}/ops/election/?x=1`);
        expect(await page.text()).toContain('client/main.js');
        expect((await getJson<Overview>(`${served.url}/ops/election/api/overview`)).body.rows.map((r) => r.ns)).toEqual(['jobs']);
        expect((await fetch(`${served.url}/ops/electionx/api/overview`)).status).toBe(418); // not ours: next()
        expect((await fetch(`${served.url}/api/overview`)).status).toBe(418);
        expect((await fetch(`${served.url}/ops/election/nothing`)).status).toBe(418);
      } finally {
        await dashboard.close();
        await served.close();
      }
    });

    test('authorize decides every request before anything is read: 401 with the challenge, 403, or served; its error stays on the server', async () => {
      const seen: string[] = [];
      const reported: unknown[] = [];
      const dashboard = createDashboard({
        dataSource: ds,
        challenge: 'Basic realm="ops"',
        authorize: async (request) => {
          seen.push(request.url ?? '');
          const header = request.headers.authorization;
          if (!header) return 'unauthenticated';
          if (header === `Basic ${Buffer.from('ops:secret').toString('base64')}`) return true;
          if (header === 'Bearer boom') throw new Error('auth backend down at ldap://svc:hunter2@10.0.0.7');
          return false;
        },
        onError: (error) => reported.push(error),
      });
      const served = await serveDashboard(dashboard);
      try {
        for (const path of ['/', '/client/main.js', '/api/overview', '/api/namespace/events?ns=jobs']) {
          const anonymous = await fetch(`${served.url}${path}`);
          expect({ path, status: anonymous.status, challenge: anonymous.headers.get('www-authenticate') }).toEqual({ path, status: 401, challenge: 'Basic realm="ops"' });
          const wrong = await fetch(`${served.url}${path}`, { headers: { authorization: `Basic ${Buffer.from('ops:guess').toString('base64')}` } });
          expect({ path, status: wrong.status }).toEqual({ path, status: 403 });
        }
        const failing = await fetch(`${served.url}/api/overview`, { headers: { authorization: 'Bearer boom' } });
        expect(failing.status).toBe(500);
        // What the hook threw goes to onError, not to the client (it may name a backend and its credentials).
        expect(await failing.json()).toEqual({ error: 'the dashboard could not answer (the error is in the server log)' });
        expect(reported.map(String)).toEqual(['Error: auth backend down at ldap://svc:hunter2@10.0.0.7']);
        const ok = await fetch(`${served.url}/api/overview`, { headers: { authorization: `Basic ${Buffer.from('ops:secret').toString('base64')}` } });
        expect(ok.status).toBe(200);
        expect(((await ok.json()) as Overview).rows.map((r) => r.ns)).toEqual(['jobs']);
        expect(seen).toContain('/api/overview');
      } finally {
        await served.close();
      }
    });

    test('bad options are refused with ValidationError naming them', () => {
      expect(() => createDashboard({ dataSource: ds, pollMs: 0 })).toThrow(/^options\.pollMs /);
      expect(() => createDashboard({ dataSource: ds, maxStreams: 0 })).toThrow(/^options\.maxStreams /);
      expect(() => createDashboard({ dataSource: ds, maxStreamBufferBytes: 10 })).toThrow(/^options\.maxStreamBufferBytes must be an integer from 1024 to 1073741824 \(got 10\)/);
      expect(() => createDashboard({ dataSource: ds, closeTimeoutMs: -1 })).toThrow(/^options\.closeTimeoutMs must be an integer from 0 to 600000/);
      expect(() => createDashboard({ dataSource: ds, basePath: 'election' })).toThrow(/^options\.basePath /);
      expect(() => createDashboard({ dataSource: ds, challenge: 'a\r\nb' })).toThrow(/^options\.challenge /);
      expect(() => createDashboard({ dataSource: ds, authorize: 'yes' as never })).toThrow(/^options\.authorize /);
      expect(() => createDashboard({ dataSource: ds, port: 1 } as never)).toThrow(/^options\.port is not a known option/);
    });
  },
  { kinds: ['sqlite', 'postgres'] },
);
