import { getJson, LiveStream } from './api.js';
import { fill, h } from './dom.js';
import { duration, plural, shortId, whereabouts } from './format.js';
import { badges, leaseMeter } from './health.js';
import { href, namespaceHref, navigate, OverviewRoute, PAGE_SIZES, type Route, SORTS, WINDOWS } from './router.js';
import { showLiveState, showProblem } from './status.js';
import { axis, lane, legend } from './timeline.js';
import type { NamespaceSummary, Overview, Timeline } from './types.js';

const SORT_LABELS: Readonly<Record<(typeof SORTS)[number], string>> = {
  ns: 'namespace',
  term: 'term',
  lease: 'lease left',
  candidates: 'candidates',
  changes: 'recent changes',
  health: 'problems first',
};

export interface View {
  /** Takes a new route of the same view without rebuilding (false: rebuild). */
  update(route: Route): boolean;
  dispose(): void;
}

interface GroupTimeline extends Timeline {
  namespaces: string[];
}

/** The overview: every namespace, filtered, sorted and paged, as a table or as one timeline lane each. */
export function showOverview(root: HTMLElement, initial: OverviewRoute): View {
  let route = initial;
  let stream: LiveStream | undefined;
  let overview: Overview | undefined;
  /** `performance.now()` when `overview` arrived: lease countdowns run from there. */
  let receivedAt = 0;
  let timeline: GroupTimeline | undefined;
  let timelineKey = '';
  let timelineFetch = 0;

  const filter = h('input', { class: 'filter', attrs: { type: 'search', placeholder: 'filter namespaces', 'aria-label': 'filter namespaces', maxlength: '255' } });
  const sort = h('select', { attrs: { 'aria-label': 'sort by' } }, ...SORTS.map((s) => h('option', { attrs: { value: s } }, SORT_LABELS[s])));
  const dir = h('button', { class: 'dir', attrs: { type: 'button', 'aria-label': 'sort direction' } });
  const size = h('select', { attrs: { 'aria-label': 'namespaces per page' } }, ...PAGE_SIZES.map((n) => h('option', { attrs: { value: String(n) } }, `${n} per page`)));
  const tableTab = h('a', { class: 'tab', href: '#/' }, 'Table');
  const timelineTab = h('a', { class: 'tab', href: '#/' }, 'Timeline');
  const windowSelect = h('select', { attrs: { 'aria-label': 'timeline window' } }, ...WINDOWS.map(([s, label]) => h('option', { attrs: { value: String(s) } }, `last ${label}`)));
  const summary = h('p', { class: 'summary', data: { field: 'summary' } }, 'loading…');
  const content = h('div', { class: 'content' });
  const pager = h('nav', { class: 'pager', attrs: { 'aria-label': 'pages' } });

  let typing: number | undefined;
  filter.addEventListener('input', () => {
    window.clearTimeout(typing);
    typing = window.setTimeout(() => navigate({ ...route, q: filter.value, page: 1 }), 300);
  });
  sort.addEventListener('change', () => navigate({ ...route, sort: sort.value as OverviewRoute['sort'], page: 1 }));
  dir.addEventListener('click', () => navigate({ ...route, dir: route.dir === 'asc' ? 'desc' : 'asc', page: 1 }));
  size.addEventListener('change', () => navigate({ ...route, size: Number(size.value), page: 1 }));
  windowSelect.addEventListener('change', () => navigate({ ...route, window: Number(windowSelect.value) }));

  fill(
    root,
    h('div', { class: 'controls' }, filter, sort, dir, size, h('span', { class: 'tabs' }, tableTab, timelineTab), windowSelect),
    summary,
    content,
    pager,
  );

  const query = () => ({ q: route.q, sort: route.sort, dir: route.dir, offset: (route.page - 1) * route.size, limit: route.size });

  function syncControls(): void {
    if (document.activeElement !== filter) filter.value = route.q;
    sort.value = route.sort;
    fill(dir, route.dir === 'asc' ? '↑ ascending' : '↓ descending');
    size.value = String(route.size);
    tableTab.setAttribute('href', href({ ...route, mode: 'table' }));
    timelineTab.setAttribute('href', href({ ...route, mode: 'timeline' }));
    tableTab.classList.toggle('active', route.mode === 'table');
    timelineTab.classList.toggle('active', route.mode === 'timeline');
    windowSelect.value = String(route.window);
    windowSelect.hidden = route.mode !== 'timeline';
  }

  /** The database clock now, from the last answer and the time since. */
  const dbNow = () => (overview ? overview.dbNow + (performance.now() - receivedAt) : Date.now());

  function leaseLeft(row: NamespaceSummary): number | null {
    return row.leaseLeftMs === null ? null : Math.max(0, row.leaseLeftMs - (performance.now() - receivedAt));
  }

  function leaderCell(row: NamespaceSummary): HTMLElement {
    if (!row.live || row.leaderId === null) return h('td', { class: 'muted' }, 'nobody');
    const where = whereabouts(row.leaderMetadata);
    return h('td', { title: row.leaderId, data: { field: 'leader' } }, h('code', null, shortId(row.leaderId)), where ? h('span', { class: 'where' }, where) : null);
  }

  function renderTable(data: Overview): void {
    const head = h(
      'tr',
      null,
      ...['Namespace', 'Leader', 'Term', 'Lease left', 'Candidates', 'Changes', 'Health'].map((title) => h('th', { attrs: { scope: 'col' } }, title)),
    );
    const rows = data.rows.map((row) =>
      h(
        'tr',
        { data: { ns: row.ns } },
        h('td', { class: 'ns' }, h('a', { href: namespaceHref(row.ns, route.window) }, row.ns)),
        leaderCell(row),
        h('td', { class: 'num', data: { field: 'term' } }, row.term === null ? '–' : String(row.term)),
        h('td', { class: 'lease-cell' }, leaseMeter(leaseLeft(row), row.leaseMs, row.expiring)),
        h('td', { class: 'num' }, String(row.candidates)),
        h('td', { class: 'num', title: `terms ended in the last ${duration(data.flapWindowSeconds * 1000)}` }, String(row.recentTerms)),
        h('td', null, badges(row, data)),
      ),
    );
    const empty = data.rows.length === 0 ? h('p', { class: 'empty' }, route.q ? 'No namespace matches the filter.' : 'No namespaces yet: nothing has registered or elected here.') : null;
    fill(content, h('table', { class: 'grid overview', data: { view: 'overview-table' } }, h('thead', null, head), h('tbody', null, ...rows)), empty);
  }

  function renderTimeline(): void {
    if (!overview) return;
    if (!timeline) {
      fill(content, h('p', { class: 'muted' }, 'loading the timeline…'));
      return;
    }
    const now = dbNow();
    const since = now - route.window * 1000;
    const byNs = new Map<string, Timeline['terms']>();
    for (const term of timeline.terms) {
      let list = byNs.get(term.ns);
      if (!list) byNs.set(term.ns, (list = []));
      list.push(term);
    }
    const lanes = overview.rows.map((row) =>
      h(
        'div',
        { class: 'lane', data: { ns: row.ns } },
        h('a', { class: 'lane-label', href: namespaceHref(row.ns, route.window), title: row.ns }, row.ns),
        lane(byNs.get(row.ns) ?? [], row, since, now),
      ),
    );
    const note = timeline.truncated ? h('p', { class: 'note' }, 'More terms overlap this window than one page reads: the oldest are left out. Choose a shorter window or fewer namespaces per page.') : null;
    fill(
      content,
      h('div', { class: 'timeline group', data: { view: 'overview-timeline' } }, h('div', { class: 'lane axis-lane' }, h('span', { class: 'lane-label' }), axis(since, now)), ...lanes),
      legend(),
      note,
    );
  }

  function renderPager(data: Overview): void {
    const first = data.total === 0 ? 0 : data.offset + 1;
    const last = Math.min(data.total, data.offset + data.rows.length);
    const pages = Math.max(1, Math.ceil(data.total / route.size));
    fill(
      pager,
      route.page > 1 ? h('a', { href: href({ ...route, page: route.page - 1 }) }, '‹ previous') : h('span', { class: 'muted' }, '‹ previous'),
      h('span', { data: { field: 'range' } }, `${first}–${last} of ${data.total}`),
      route.page < pages ? h('a', { href: href({ ...route, page: route.page + 1 }) }, 'next ›') : h('span', { class: 'muted' }, 'next ›'),
    );
  }

  async function loadTimeline(): Promise<void> {
    const ticket = ++timelineFetch;
    try {
      const answer = await getJson<GroupTimeline>('api/overview/timeline', { ...query(), window: route.window });
      if (ticket !== timelineFetch) return;
      timeline = answer;
      renderTimeline();
    } catch (error) {
      if (ticket === timelineFetch) showProblem(`timeline: ${(error as Error).message}`);
    }
  }

  function onOverview(data: Overview): void {
    overview = data;
    receivedAt = performance.now();
    showProblem(null);
    fill(
      summary,
      h('span', { data: { field: 'total' } }, plural(data.total, 'namespace')),
      ' · ',
      h('span', { class: data.vacant > 0 ? 'bad-text' : '', data: { field: 'vacant' } }, `${data.vacant} vacant`),
      ' · ',
      h('span', { class: data.flapping > 0 ? 'flap-text' : '', data: { field: 'flapping' } }, `${data.flapping} flapping`),
    );
    renderPager(data);
    if (route.mode === 'table') {
      renderTable(data);
      return;
    }
    // New terms or vacancies on the page: read the timeline again; renewals only move "now".
    const key = data.rows.map((r) => `${r.ns}\u0000${r.term}\u0000${r.live}`).join('\u0001');
    if (key !== timelineKey) {
      timelineKey = key;
      void loadTimeline();
    }
    renderTimeline();
  }

  function connect(): void {
    stream?.close();
    overview = undefined;
    timeline = undefined;
    timelineKey = '';
    fill(summary, 'loading…');
    fill(content);
    stream = new LiveStream('api/overview/events', query(), { overview: (data) => onOverview(data as Overview), problem: (data) => showProblem(`database: ${(data as { error: string }).error}`) }, showLiveState);
  }

  // Countdowns tick between updates; a timeline's "now" edge moves.
  const ticker = window.setInterval(() => {
    if (!overview) return;
    if (route.mode === 'timeline') {
      renderTimeline();
      return;
    }
    const cells = content.querySelectorAll<HTMLTableRowElement>('tbody tr');
    overview.rows.forEach((row, i) => {
      const cell = cells[i]?.querySelector('.lease-cell');
      if (cell) fill(cell, leaseMeter(leaseLeft(row), row.leaseMs, row.expiring || (row.leaseMs !== null && (leaseLeft(row) ?? Infinity) < row.leaseMs / 2)));
    });
  }, 1000);
  const refresh = window.setInterval(() => {
    if (route.mode === 'timeline' && overview) void loadTimeline();
  }, 30_000);

  document.title = 'Leader election · overview';
  syncControls();
  connect();

  return {
    update(next: Route): boolean {
      if (next.view !== 'overview') return false;
      const reconnect = next.q !== route.q || next.sort !== route.sort || next.dir !== route.dir || next.page !== route.page || next.size !== route.size;
      const redraw = next.mode !== route.mode || next.window !== route.window;
      route = next;
      syncControls();
      if (reconnect) connect();
      else if (redraw && overview) {
        timeline = undefined;
        timelineKey = '';
        onOverview(overview);
      }
      return true;
    },
    dispose(): void {
      stream?.close();
      window.clearTimeout(typing);
      window.clearInterval(ticker);
      window.clearInterval(refresh);
      timelineFetch++;
    },
  };
}
