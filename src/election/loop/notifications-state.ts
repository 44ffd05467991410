import type { ListenOutage } from '../../databases/contract/notifications';
import { LISTEN_DOWN_REPORT_INTERVAL_MS } from '../observe/listen-options';

/**
 * What a loop's `'notifications'` event says about PostgreSQL LISTEN, by which it learns of
 * hand-overs at once instead of at its next tick:
 * - `down`: the LISTEN connection was lost or could not be made. It is made again with backoff
 *   (`DEFAULT_LISTEN_RECONNECT_MIN_MS` doubling to `DEFAULT_LISTEN_RECONNECT_MAX_MS`); meanwhile
 *   hand-overs are noticed by the ticks, within `intervalMs`. The same error is reported once as
 *   `'error'` (phase `listen`); the attempts that fail after it are not, except as one reminder
 *   per `LISTEN_DOWN_REPORT_INTERVAL_MS` (a minute) while the outage lasts.
 * - `up`: LISTEN delivers again after a `down` (a NOTIFY sent through the DataSource arrived on
 *   the new connection, or could not be sent: then the ticks report the database); a tick
 *   follows at once in case a notification was missed. `downMs` and `failures` describe the outage.
 * - `off`: LISTEN does not deliver on this connection (behind a transaction-mode pooler): it is
 *   given up for good, reported once as `'error'`; hand-overs are noticed by the ticks.
 */
export type NotificationsState =
  | {
      /** LISTEN was lost or could not be made; it is being made again. */
      readonly state: 'down';
      /** The failure that began the outage. */
      readonly error: Error;
    }
  | {
      /** LISTEN delivers again after a `down`. */
      readonly state: 'up';
      /** From the outage's first failure until LISTEN delivered again (host monotonic clock), in milliseconds. */
      readonly downMs: number;
      /** Failures during the outage: the loss (or failed attempt) that began it and each reconnect attempt that failed. */
      readonly failures: number;
    }
  | {
      /** LISTEN does not deliver on this connection and is given up for good. */
      readonly state: 'off';
      /** Why it was given up. */
      readonly error: Error;
    };

/**
 * One loop's side of the LISTEN state, written once for the elector and the group: the first
 * failure of an outage is an `'error'` plus a `down` event, a reminder is an `'error'` only, and
 * the outage's end an `up` event.
 */
export class NotificationsReporter {
  #state: NotificationsState['state'] = 'up';

  constructor(
    private readonly report: (message: string, error: Error) => void,
    private readonly emit: (state: NotificationsState) => void,
  ) {}

  down(error: Error): void {
    if (this.#state === 'off') return;
    if (this.#state === 'down') {
      this.report('PostgreSQL LISTEN is still down (hand-overs are noticed by ticks; reconnecting with backoff)', error);
      return;
    }
    this.#state = 'down';
    this.report(
      `PostgreSQL LISTEN is down: hand-overs are noticed by ticks (every intervalMs) until it is back; reconnecting with backoff, reported again only if still down in ${LISTEN_DOWN_REPORT_INTERVAL_MS / 1000} s, and a 'notifications' event { state: 'up' } says when it is back`,
      error,
    );
    this.emit(Object.freeze({ state: 'down', error }));
  }

  up(outage: ListenOutage): void {
    if (this.#state !== 'down') return;
    this.#state = 'up';
    this.emit(Object.freeze({ state: 'up', downMs: outage.downMs, failures: outage.failures }));
  }

  off(error: Error): void {
    if (this.#state === 'off') return;
    this.#state = 'off';
    this.report('LISTEN does not deliver notifications here; falling back to ticks', error);
    this.emit(Object.freeze({ state: 'off', error }));
  }
}
