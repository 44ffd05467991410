import { TICK_JITTER } from '../elector-options';
import type { LoopRun } from '../../../db/loop-run';

/**
 * The ticks of one run of a loop: never two at once; one asked for while another runs follows it
 * at once; after the last, the next is scheduled `intervalMs` ±10% (jitter) later. Nothing of it
 * starts or is scheduled once its {@link LoopRun} has ended.
 */
export class Ticks {
  readonly #loop: LoopRun;
  readonly #intervalMs: number;
  readonly #tick: () => Promise<void>;
  #ticking: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(loop: LoopRun, intervalMs: number, tick: () => Promise<void>) {
    this.#loop = loop;
    this.#intervalMs = intervalMs;
    this.#tick = tick;
  }

  /** The ticks in flight, if any. */
  get inFlight(): Promise<void> | undefined {
    return this.#ticking;
  }

  /**
   * Ticks now (or right after the tick in flight), until no extra tick was asked for meanwhile,
   * then schedules the next. Never rejects. `again`: the caller needs a tick begun after now
   * (a namespace added), so it waits for the repeat too.
   */
  async run(again = false): Promise<void> {
    if (this.#ticking) {
      this.#again = true;
      if (again) while (this.#ticking) await this.#ticking;
      else await this.#ticking;
      return;
    }
    this.#loop.clear(this.#timer);
    this.#timer = undefined;
    const ticking = this.#loop.start(async () => {
      do {
        this.#again = false;
        await this.#tick();
      } while (this.#again && !this.#loop.ended);
    });
    if (!ticking) return;
    this.#ticking = ticking;
    try {
      await ticking;
    } finally {
      if (this.#ticking === ticking) this.#ticking = undefined;
    }
    this.#schedule();
  }

  #schedule(): void {
    this.#loop.clear(this.#timer);
    const jitter = 1 - TICK_JITTER + 2 * TICK_JITTER * Math.random();
    this.#timer = this.#loop.timer(() => {
      this.#timer = undefined;
      void this.run();
    }, this.#intervalMs * jitter);
  }
}
