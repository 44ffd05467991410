import { byId, fill } from './dom.js';
import type { LiveState } from './api.js';

const LABELS: Readonly<Record<LiveState, string>> = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…' };

/** The header's live indicator. */
export function showLiveState(state: LiveState): void {
  const element = byId('live');
  element.dataset.state = state;
  fill(element, LABELS[state]);
}

/** The banner under the header: a read that failed; null clears it. */
export function showProblem(message: string | null): void {
  const element = byId('problem');
  element.hidden = message === null;
  fill(element, message ?? '');
}
