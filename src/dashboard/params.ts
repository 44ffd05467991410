import { ValidationError } from '../errors';
import { checkNs } from '../election/validate';
import {
  DEFAULT_PAGE_SIZE,
  DEFAULT_TIMELINE_WINDOW_SECONDS,
  MAX_FILTER_LENGTH,
  MAX_PAGE_SIZE,
  MAX_TIMELINE_WINDOW_SECONDS,
  MIN_TIMELINE_WINDOW_SECONDS,
} from './options';
import { OVERVIEW_SORTS, OverviewQuery, OverviewSort } from './queries/overview';

/** The highest accepted overview offset: far beyond any real number of namespaces, and a bound on what OFFSET skips. */
export const MAX_OFFSET = 1_000_000;

function single(params: URLSearchParams, name: string): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw new ValidationError(name, 'must be given once');
  return values[0];
}

function integer(params: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const text = single(params, name);
  if (text === undefined || text === '') return fallback;
  if (!/^\d{1,10}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ValidationError(name, `must be an integer from ${min} to ${max} (got ${JSON.stringify(text.slice(0, 40))})`);
  }
  return Number(text);
}

/** `q`, `sort`, `dir`, `offset`, `limit` of an overview page. */
export function overviewQuery(params: URLSearchParams): OverviewQuery {
  const filter = single(params, 'q') ?? '';
  if ([...filter].length > MAX_FILTER_LENGTH) throw new ValidationError('q', `must be at most ${MAX_FILTER_LENGTH} characters`);
  if (!filter.isWellFormed() || filter.includes('\u0000')) throw new ValidationError('q', 'must be well-formed text without NUL');
  const sort = single(params, 'sort') ?? 'ns';
  if (!(OVERVIEW_SORTS as readonly string[]).includes(sort)) throw new ValidationError('sort', `must be one of ${OVERVIEW_SORTS.join(', ')}`);
  const dir = single(params, 'dir') ?? 'asc';
  if (dir !== 'asc' && dir !== 'desc') throw new ValidationError('dir', 'must be asc or desc');
  return {
    filter,
    sort: sort as OverviewSort,
    descending: dir === 'desc',
    offset: integer(params, 'offset', 0, 0, MAX_OFFSET),
    limit: integer(params, 'limit', DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE),
  };
}

/** `window`: seconds back from now. */
export function windowSeconds(params: URLSearchParams): number {
  return integer(params, 'window', DEFAULT_TIMELINE_WINDOW_SECONDS, MIN_TIMELINE_WINDOW_SECONDS, MAX_TIMELINE_WINDOW_SECONDS);
}

/** `ns`: required. */
export function namespaceParam(params: URLSearchParams): string {
  const ns = single(params, 'ns');
  if (ns === undefined) throw new ValidationError('ns', 'is required');
  return checkNs(ns, 'ns');
}
