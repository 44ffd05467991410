import { getJson, LiveStream } from './api.js';
import { fill, h } from './dom.js';
import { clock, dateTime, duration, shortId, valueText, whereabouts } from './format.js';
import { badges, leaseMeter } from './health.js';
import type { View } from './overview.js';
import { NamespaceRoute, navigate, type Route, WINDOWS } from './router.js';
import { SchedulesCard } from './schedules.js';
import { showLiveState, showProblem } from './status.js';
import { axis, lane, legend, segments } from './timeline.js';
import type { CandidateView, LeaderEvent, Metadata, NamespaceDetail, Timeline } from './types.js';

/** How often the candidates (heartbeats, joins, departures) are read again. */
const DETAIL_REFRESH_MS = 5_000;
/** How often the timeline is read again without a change of leader. */
const TIMELINE_REFRESH_MS = 30_000;
/** The most terms listed under the timeline. */
const TERMS_LISTED = 200;

function metadataList(metadata: Metadata | null): HTMLElement {
  if (!metadata || Object.keys(metadata).length === 0) return h('span', { class: 'muted' }, 'no metadata');
  return h(
    'dl',
    { class: 'meta' },
    ...Object.entries(metadata).flatMap(([key, value]) => [h('dt', null, key), h('dd', null, valueText(value))]),
  );
}

/** A namespace: its leader (live), candidates, and a timeline of its terms over a window. */
export function showNamespace(root: HTMLElement, initial: NamespaceRoute): View {
  let route = initial;
  let detail: NamespaceDetail | undefined;
  let detailAt = 0;
  let timeline: Timeline | undefined;
  let timelineAt = 0;
  /** The newest state the stream delivered. */
  let latest: LeaderEvent | undefined;
  let reads = 0;

  const windowSelect = h('select', { attrs: { 'aria-label': 'timeline window' } }, ...WINDOWS.map(([s, label]) => h('option', { attrs: { value: String(s) } }, `last ${label}`)));
  windowSelect.addEventListener('change', () => navigate({ ...route, window: Number(windowSelect.value) }));
  const health = h('span', { class: 'head-badges' });
  const leaderCard = h('section', { class: 'card leader', data: { view: 'leader' } });
  const candidatesBox = h('section', { class: 'card' });
  const timelineBox = h('div', { class: 'timeline single', data: { view: 'namespace-timeline' } });
  const termsBox = h('div', { class: 'terms' });
  const schedules = new SchedulesCard(route.ns);

  fill(
    root,
    h('div', { class: 'ns-head' }, h('h1', { data: { field: 'ns' } }, route.ns), health),
    leaderCard,
    candidatesBox,
    h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'Timeline'), windowSelect), timelineBox, legend(), termsBox),
    schedules.element,
  );

  const since = (at: number) => performance.now() - at;
  /** The database clock now, as far as the page knows it. */
  const dbNow = () => (detail ? detail.dbNow + since(detailAt) : timeline ? timeline.dbNow + since(timelineAt) : Date.now());

  /**
   * When the shown state began, by the database clock: from the stream when it has delivered this
   * state, else from the first reads — the timeline's term (its acquisition, or its end for the
   * vacancy after it) or, for a lease that ran out without an end written, the lease's expiry. So
   * the page shows it from its first read, not only once its stream is connected.
   */
  function stateSince(leaderId: string | null, term: number | null): number | null {
    if (latest && latest.leaderId === leaderId && latest.term === term) return latest.at;
    if (term === null) return null;
    const read = timeline?.terms.find((t) => t.term === term);
    if (leaderId !== null) return read && read.leaderId === leaderId && read.endedAt === null ? read.acquiredAt : null;
    if (read?.endedAt != null) return read.endedAt;
    const summary = detail?.summary;
    return summary && summary.term === term && !summary.live ? summary.leaseExpiresAt : null;
  }

  function renderLeader(): void {
    const summary = detail?.summary ?? null;
    // The stream's state is the newest; the detail adds the lease and the leader's candidate row.
    const leaderId = latest ? latest.leaderId : (summary?.leaderId ?? null);
    const term = latest ? latest.term : (summary?.term ?? null);
    const sameTerm = summary !== null && summary.leaderId === leaderId && summary.term === term;
    const began = stateSince(leaderId, term);
    if (leaderId === null) {
      fill(
        leaderCard,
        h('h2', null, 'Leader'),
        h('p', { class: 'vacant-text', data: { field: 'leader-id' } }, 'nobody leads'),
        h('p', { class: 'muted', data: { field: 'since' } }, term === null ? 'no term yet' : `vacant since ${began === null ? '–' : dateTime(began)} (after term ${term})`),
      );
      return;
    }
    const left = sameTerm && summary!.leaseLeftMs !== null ? Math.max(0, summary!.leaseLeftMs - since(detailAt)) : null;
    const metadata = latest?.leaderId === leaderId ? latest.metadata : (summary?.leaderMetadata ?? null);
    fill(
      leaderCard,
      h('h2', null, 'Leader'),
      h('p', { class: 'leader-id' }, h('code', { data: { field: 'leader-id' } }, leaderId), whereabouts(metadata) ? h('span', { class: 'where' }, whereabouts(metadata)) : null),
      h(
        'dl',
        { class: 'facts' },
        h('dt', null, 'term'),
        h('dd', { data: { field: 'term' } }, term === null ? '–' : String(term)),
        h('dt', null, 'leading since'),
        h('dd', { data: { field: 'since' } }, began === null ? '–' : `${dateTime(began)} (${duration(dbNow() - began)})`),
        h('dt', null, 'lease left'),
        h('dd', null, leaseMeter(left, sameTerm ? summary!.leaseMs : null, sameTerm && summary!.leaseMs !== null && left !== null && left < summary!.leaseMs / 2)),
      ),
      h('h3', null, 'Metadata'),
      metadataList(metadata),
    );
  }

  function candidateRow(c: CandidateView): HTMLElement {
    const age = c.heartbeatAgeMs === null ? null : c.heartbeatAgeMs + since(detailAt);
    return h(
      'tr',
      { class: c.leader ? 'is-leader' : '', data: { candidate: c.candidateId } },
      h('td', { title: c.candidateId }, h('code', null, shortId(c.candidateId)), c.leader ? h('span', { class: 'badge ok' }, 'leader') : null),
      h('td', { class: 'num' }, String(c.priority)),
      h('td', null, c.eligible ? 'yes' : h('span', { class: 'badge warn' }, 'no')),
      h('td', { class: 'num' }, age === null ? '–' : `${duration(age)} ago`),
      h('td', { class: 'num' }, c.expiresInMs === null ? '–' : duration(Math.max(0, c.expiresInMs - since(detailAt)))),
      h('td', null, metadataList(c.metadata)),
    );
  }

  function renderCandidates(): void {
    if (!detail) return;
    const rows = detail.candidates.map(candidateRow);
    fill(
      candidatesBox,
      h('h2', null, `Candidates (${detail.candidates.length}${detail.candidatesTruncated ? '+' : ''})`),
      detail.candidates.length === 0
        ? h('p', { class: 'muted' }, 'No active candidate.')
        : h(
            'table',
            { class: 'grid candidates', data: { view: 'candidates' } },
            h('thead', null, h('tr', null, ...['Candidate', 'Priority', 'Eligible', 'Heartbeat', 'Expires in', 'Metadata'].map((t) => h('th', { attrs: { scope: 'col' } }, t)))),
            h('tbody', null, ...rows),
          ),
      detail.candidatesTruncated ? h('p', { class: 'note' }, 'Only the first candidates are listed.') : null,
    );
    fill(health, badges(detail.summary, detail));
  }

  function renderTimeline(): void {
    if (!timeline) {
      fill(timelineBox, h('p', { class: 'muted' }, 'loading…'));
      return;
    }
    const now = timeline.dbNow + since(timelineAt);
    const from = now - route.window * 1000;
    const summary = detail?.summary ?? null;
    const state = summary ? { live: summary.live, term: summary.term, leaseExpiresAt: summary.leaseExpiresAt } : null;
    fill(timelineBox, h('div', { class: 'lane axis-lane' }, axis(from, now)), h('div', { class: 'lane' }, lane(timeline.terms, state, from, now)));
    const listed = segments(timeline.terms, state, now).filter((s) => s.term !== null).reverse().slice(0, TERMS_LISTED);
    const byTerm = new Map(timeline.terms.map((t) => [t.term, t]));
    fill(
      termsBox,
      timeline.truncated ? h('p', { class: 'note' }, 'More terms overlap this window than are read at once: the oldest are left out.') : null,
      listed.length === 0
        ? h('p', { class: 'muted' }, 'No term in this window.')
        : h(
            'table',
            { class: 'grid terms-table', data: { view: 'terms' } },
            h('thead', null, h('tr', null, ...['Term', 'Leader', 'Acquired', 'Ended', 'Held', 'End'].map((t) => h('th', { attrs: { scope: 'col' } }, t)))),
            h(
              'tbody',
              null,
              ...listed.map((s) => {
                const t = byTerm.get(s.term!)!;
                const who = whereabouts(t.metadata);
                return h(
                  'tr',
                  { data: { term: String(t.term) } },
                  h('td', { class: 'num' }, String(t.term)),
                  h('td', { title: t.leaderId }, h('code', null, shortId(t.leaderId)), who ? h('span', { class: 'where' }, who) : null),
                  h('td', null, dateTime(s.from)),
                  h('td', null, s.kind === 'current' ? '–' : clock(s.to)),
                  h('td', { class: 'num' }, duration(s.to - s.from)),
                  h('td', null, h('span', { class: `reason seg-${s.kind}` }), s.kind === 'current' ? 'leading' : s.kind),
                );
              }),
            ),
          ),
    );
  }

  let detailPending = false;
  async function readDetail(): Promise<void> {
    const ticket = ++reads;
    detailPending = true;
    try {
      const answer = await getJson<NamespaceDetail>('api/namespace', { ns: route.ns });
      if (ticket !== reads) return;
      detail = answer;
      detailAt = performance.now();
      showProblem(null);
      renderLeader();
      renderCandidates();
      renderTimeline(); // the lane and the terms end the open term by the leader row
    } catch (error) {
      if (ticket === reads) showProblem((error as Error).message);
    } finally {
      if (ticket === reads) detailPending = false;
    }
  }

  let timelineReads = 0;
  async function readTimeline(): Promise<void> {
    const ticket = ++timelineReads;
    try {
      const answer = await getJson<Timeline>('api/namespace/timeline', { ns: route.ns, window: route.window });
      if (ticket !== timelineReads) return;
      timeline = answer;
      timelineAt = performance.now();
      renderTimeline();
      renderLeader(); // the timeline knows when the current term began
    } catch (error) {
      if (ticket === timelineReads) showProblem(`timeline: ${(error as Error).message}`);
    }
  }

  const onLeader = (event: LeaderEvent) => {
    latest = event;
    // The leader shows at once; lease, candidates and timeline follow from fresh reads.
    renderLeader();
    void readDetail().then(() => readTimeline());
    void schedules.read(); // a new leader looks back at its schedules' runs
  };

  const stream = new LiveStream('api/namespace/events', { ns: route.ns }, { leader: (data) => onLeader(data as LeaderEvent) }, showLiveState);
  const ticker = window.setInterval(() => {
    // A live lease is renewed every third of its length: read again once the one shown looks overdue.
    const summary = detail?.summary;
    if (summary?.live && summary.leaseMs !== null && summary.leaseLeftMs !== null && since(detailAt) > 1000 && !detailPending) {
      if (summary.leaseLeftMs - since(detailAt) < summary.leaseMs * 0.6) void readDetail();
    }
    renderLeader();
    renderCandidates();
    renderTimeline();
  }, 1000);
  const detailTimer = window.setInterval(() => void readDetail(), DETAIL_REFRESH_MS);
  const timelineTimer = window.setInterval(() => void readTimeline(), TIMELINE_REFRESH_MS);

  document.title = `Leader election · ${route.ns}`;
  windowSelect.value = String(route.window);
  fill(leaderCard, h('h2', null, 'Leader'), h('p', { class: 'muted' }, 'loading…'));
  void readDetail();
  void readTimeline();

  return {
    update(next: Route): boolean {
      if (next.view !== 'namespace' || next.ns !== route.ns) return false;
      const redraw = next.window !== route.window;
      route = next;
      windowSelect.value = String(route.window);
      if (redraw) {
        timeline = undefined;
        renderTimeline();
        void readTimeline();
      }
      return true;
    },
    dispose(): void {
      stream.close();
      schedules.dispose();
      window.clearInterval(ticker);
      window.clearInterval(detailTimer);
      window.clearInterval(timelineTimer);
      reads++;
      timelineReads++;
    },
  };
}

