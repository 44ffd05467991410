import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { LeaderElector } from '../election/loop/elector';
import { ValidationError } from '../errors';
import type { Schedule } from '../schedules/schedule';
import type { ScheduledRun } from '../schedules/scheduled-run';
import { leaderCronMethods } from './leader-cron.decorator';

/**
 * Registers the application's `@LeaderCron` methods as schedules of the module's elector when the
 * module initialises (every instance exists by then, and the elector starts later, in
 * `onApplicationBootstrap`), and cancels them when the module is destroyed: that waits for the
 * running jobs. The elector stops (hands over) alongside, not after: each waits for those jobs
 * within `stopTimeoutMs`, so that the shutdown takes one bound, not two, when a job ignores its
 * signal (one after the other they took one each: a job holding its transaction open makes the
 * stop's unregister wait too). The stop vacates the lease once the jobs have returned; past the
 * bound it leaves it to run out, as any stop does. `ElectorLifecycle`'s stop then finds the
 * elector stopped.
 */
@Injectable()
export class LeaderCronRegistrar implements OnModuleInit, OnModuleDestroy {
  #schedules: Schedule[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly elector: LeaderElector,
  ) {}

  onModuleInit(): void {
    const wrappers = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    const seen = new Set<object>();
    for (const wrapper of wrappers) {
      const instance: unknown = wrapper.instance;
      if (typeof instance !== 'object' || instance === null || seen.has(instance)) continue;
      // The same instance can be listed twice (a provider exported under another token).
      seen.add(instance);
      const methods = leaderCronMethods(instance);
      if (methods.length === 0) continue;
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
        throw new ValidationError(
          `@LeaderCron() ${String(wrapper.name)}`,
          'is on a request-scoped or transient provider: schedules run once per slot, on one singleton instance',
        );
      }
      for (const { key, options } of methods) {
        // Checked twice on purpose: @LeaderCron checked these options when the class was declared
        // (its one chance to fail there), and schedule() checks them again here. That second check
        // is the one every schedule goes through, and its result is what the schedule runs by:
        // defaults filled in and the cron parsed into a series of this schedule's own (one
        // decorated class can be registered on several electors: an application created twice
        // in one process). Skipping it would take an unchecked way into the elector that trusts
        // options by where they come from, to save one parse per method at module start; frozen
        // since declaration, they pass it again.
        const target = instance as Record<string | symbol, (run: ScheduledRun) => unknown>;
        this.#schedules.push(this.elector.schedule({ ...options }, (run) => target[key]!(run)));
      }
    }
  }

  async onModuleDestroy(): Promise<void> {
    const schedules = this.#schedules;
    this.#schedules = [];
    if (schedules.length === 0) return;
    await Promise.all([...schedules.map((schedule) => schedule.cancel()), this.elector.stop()]);
  }
}
