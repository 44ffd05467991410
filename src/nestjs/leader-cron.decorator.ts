import { ValidationError, shown } from '../errors';
import { checkScheduleOptions, type ScheduleOptions } from '../schedules/options';

/** The options of {@link LeaderCron}: a schedule's options without its slots (the first argument says those). */
export type LeaderCronOptions = Partial<Omit<ScheduleOptions, 'cron' | 'everyMs'>>;

/** The first argument of {@link LeaderCron}: a cron pattern, or `{ everyMs }`. */
export type LeaderCronSlots = string | { readonly everyMs: number };

/** One decorated method, as the module finds it on a class. */
export interface LeaderCronMethod {
  /** The method's property key on the prototype. */
  readonly key: string | symbol;
  /** The schedule's options, checked when the class was declared, with the name filled in. */
  readonly options: ScheduleOptions;
}

/** Where a class keeps its decorated methods (on the prototype, so subclasses inherit them). */
const LEADER_CRON_METHODS = Symbol('gemstone-utils:LeaderCron.methods');

function slotOptions(slots: unknown): Pick<ScheduleOptions, 'cron' | 'everyMs'> {
  if (typeof slots === 'string') return { cron: slots };
  if (typeof slots === 'object' && slots !== null && !Array.isArray(slots)) {
    const keys = Object.keys(slots);
    if (keys.length === 1 && keys[0] === 'everyMs') return { everyMs: (slots as { everyMs: number }).everyMs };
  }
  throw new ValidationError('cron', `must be a cron pattern string or { everyMs } (got ${shown(slots)})`);
}

/**
 * Runs the decorated method of a Nest provider as a schedule of the module's elector
 * (`elector.schedule`): at each slot of `cron` (5 fields, or 6 with seconds first, read in
 * `options.timeZone`) or of `{ everyMs }`, on the leader of the elector's namespace, each slot once
 * whatever the replicas' clocks, hand-overs and failovers. The method is called on the provider's
 * instance with the {@link ScheduledRun} (`run.lease.signal`, `run.transaction(fn)`); its result
 * is awaited and decides the slot's state as for any schedule.
 *
 * `options` are the schedule's (`catchUp`, `catchUpWindowMs`, `overlap`, `maxAttempts`,
 * `timeZone`), and `name`, which defaults to `ClassName.methodName`: it must be unique in the
 * namespace, since it keys the slots in the runs table (renaming a method therefore starts a
 * new schedule). Everything is checked when the class is declared: bad options throw a
 * `ValidationError` naming the parameter (`cron` for the first argument).
 *
 * `ElectionModule` finds the decorated methods of the application's providers and controllers
 * (singletons; request-scoped and transient ones are refused) when it initialises, registers
 * them on its `LeaderElector` (its namespace; not on a `LeaderElectorGroup`), and cancels them
 * when the module is destroyed — aborting `run.lease.signal` and waiting for running jobs, before
 * the elector hands over.
 */
export function LeaderCron(slots: LeaderCronSlots, options?: LeaderCronOptions): MethodDecorator {
  const given = slotOptions(slots);
  if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) {
    throw new ValidationError('options', `must be an object (got ${shown(options)})`);
  }
  for (const key of ['cron', 'everyMs'] as const) {
    if (options && key in options) throw new ValidationError(`options.${key}`, "is @LeaderCron's first argument: give it there");
  }
  return (target: object, key: string | symbol, descriptor: PropertyDescriptor) => {
    if (typeof descriptor.value !== 'function') throw new ValidationError('@LeaderCron()', `decorates methods only (${String(key)} is not one)`);
    if (typeof target === 'function') throw new ValidationError('@LeaderCron()', `decorates instance methods only (${String(key)} is static)`);
    const className = (target as { constructor?: { name?: string } }).constructor?.name || 'anonymous';
    const full: ScheduleOptions = { name: `${className}.${String(key)}`, ...options, ...given };
    // Checked now, so a bad decorator fails when the class is declared, not when the app starts.
    // Only to refuse: the result is not kept, `schedule()` checks them again when the module
    // registers them (leader-cron.registrar.ts says why both are needed).
    checkScheduleOptions(full);
    const inherited = (Reflect.getMetadata(LEADER_CRON_METHODS, target) as LeaderCronMethod[] | undefined) ?? [];
    const own = inherited.filter((m) => m.key !== key);
    Reflect.defineMetadata(LEADER_CRON_METHODS, [...own, Object.freeze({ key, options: Object.freeze(full) })], target);
    return descriptor;
  };
}

/** The `@LeaderCron` methods of an instance's class and its ancestors; empty for other values. */
export function leaderCronMethods(instance: unknown): readonly LeaderCronMethod[] {
  if (typeof instance !== 'object' || instance === null) return [];
  return (Reflect.getMetadata(LEADER_CRON_METHODS, instance) as LeaderCronMethod[] | undefined) ?? [];
}
