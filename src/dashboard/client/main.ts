/** The dashboard page: shows the view of the URL's fragment, and follows it as it changes. */
import { byId, fill, h } from './dom.js';
import { showNamespace } from './namespace.js';
import { showOverview, type View } from './overview.js';
import { href, parseRoute, type Route } from './router.js';
import { showProblem } from './status.js';

let current: View | undefined;

function crumbs(route: Route): void {
  const nav = byId('crumbs');
  if (route.view === 'overview') fill(nav, h('span', null, 'all namespaces'));
  else fill(nav, h('a', { href: href(parseRoute('#/')) }, 'all namespaces'), ' / ', h('span', { data: { field: 'crumb-ns' } }, route.ns));
}

function show(): void {
  const route = parseRoute(location.hash);
  crumbs(route);
  if (current?.update(route)) return;
  current?.dispose();
  showProblem(null);
  const root = byId('view');
  current = route.view === 'overview' ? showOverview(root, route) : showNamespace(root, route);
}

window.addEventListener('hashchange', show);
show();
