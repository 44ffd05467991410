/** The page's routes live in the URL's fragment: `#/?q=…` (overview) and `#/ns/<namespace>?window=…`. */

export const SORTS = ['ns', 'term', 'lease', 'candidates', 'changes', 'health'] as const;
export type Sort = (typeof SORTS)[number];
export const PAGE_SIZES = [25, 50, 100, 200, 500] as const;
/** Timeline windows offered, in seconds (the server accepts 60 s to 31 days). */
export const WINDOWS: readonly (readonly [number, string])[] = [
  [60, '1 min'],
  [300, '5 min'],
  [900, '15 min'],
  [3_600, '1 hour'],
  [6 * 3_600, '6 hours'],
  [86_400, '24 hours'],
  [7 * 86_400, '7 days'],
  [30 * 86_400, '30 days'],
];
export const DEFAULT_WINDOW = 3_600;

export interface OverviewRoute {
  readonly view: 'overview';
  readonly q: string;
  readonly sort: Sort;
  readonly dir: 'asc' | 'desc';
  /** 1-based. */
  readonly page: number;
  readonly size: number;
  readonly mode: 'table' | 'timeline';
  readonly window: number;
}

export interface NamespaceRoute {
  readonly view: 'namespace';
  readonly ns: string;
  readonly window: number;
}

export type Route = OverviewRoute | NamespaceRoute;

function positive(text: string | null, fallback: number, max: number): number {
  const n = Number(text);
  return Number.isSafeInteger(n) && n >= 1 && n <= max ? n : fallback;
}

function windowOf(params: URLSearchParams): number {
  const n = Number(params.get('window'));
  return Number.isSafeInteger(n) && n >= 60 && n <= 31 * 86_400 ? n : DEFAULT_WINDOW;
}

export function parseRoute(hash: string): Route {
  const text = hash.replace(/^#/, '');
  const [path = '', query = ''] = text.split(/\?(.*)/s, 2);
  const params = new URLSearchParams(query);
  if (path.startsWith('/ns/')) {
    let ns: string;
    try {
      ns = decodeURIComponent(path.slice(4));
    } catch {
      ns = path.slice(4);
    }
    return { view: 'namespace', ns, window: windowOf(params) };
  }
  const sort = params.get('sort');
  const size = positive(params.get('size'), 50, 500);
  return {
    view: 'overview',
    q: params.get('q') ?? '',
    sort: (SORTS as readonly string[]).includes(sort ?? '') ? (sort as Sort) : 'ns',
    dir: params.get('dir') === 'desc' ? 'desc' : 'asc',
    page: positive(params.get('page'), 1, 1_000_000),
    size: (PAGE_SIZES as readonly number[]).includes(size) ? size : 50,
    mode: params.get('mode') === 'timeline' ? 'timeline' : 'table',
    window: windowOf(params),
  };
}

/** The fragment of a route (always starts with `#/`). */
export function href(route: Route): string {
  const params = new URLSearchParams();
  if (route.view === 'namespace') {
    if (route.window !== DEFAULT_WINDOW) params.set('window', String(route.window));
    const query = params.toString();
    return `#/ns/${encodeURIComponent(route.ns)}${query ? `?${query}` : ''}`;
  }
  if (route.q) params.set('q', route.q);
  if (route.sort !== 'ns') params.set('sort', route.sort);
  if (route.dir !== 'asc') params.set('dir', route.dir);
  if (route.page !== 1) params.set('page', String(route.page));
  if (route.size !== 50) params.set('size', String(route.size));
  if (route.mode !== 'table') params.set('mode', route.mode);
  if (route.window !== DEFAULT_WINDOW) params.set('window', String(route.window));
  const query = params.toString();
  return `#/${query ? `?${query}` : ''}`;
}

export function namespaceHref(ns: string, window = DEFAULT_WINDOW): string {
  return href({ view: 'namespace', ns, window });
}

export function navigate(route: Route): void {
  const next = href(route);
  if (location.hash !== next) location.hash = next;
}
