import { Inject } from '@nestjs/common';
import { LeaderElector } from '../election/loop/elector';
import type { Lease } from '../election/loop/elector-options';
import { GemstoneError, ValidationError } from '../errors';

/** The property of a decorated class's instances where Nest injects the application's elector. */
const ELECTOR = Symbol('gemstone-utils:LeaderOnly.elector');
/** Marks a class whose elector property injection is already declared. */
const INJECTION_DECLARED = Symbol('gemstone-utils:LeaderOnly.injection');

/** A `@LeaderOnly()` method ran on an instance Nest did not create (no elector was injected). */
export class LeaderOnlyWithoutElectorError extends GemstoneError {}

type Method = (this: unknown, ...args: unknown[]) => unknown;

/** Nest keeps decorator metadata on the method function (`@Cron`, `@Interval`, `SetMetadata`…): carry it over. */
function copyMetadata(from: Method, to: Method): void {
  for (const key of Reflect.getOwnMetadataKeys(from)) {
    if (!Reflect.hasOwnMetadata(key, to)) Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
  }
}

/**
 * Runs the decorated method only on the leader — for `@nestjs/schedule` jobs (`@Cron`,
 * `@Interval`, `@Timeout`) that every instance schedules but one should run.
 *
 * - On the leader (`elector.isLeader`, a local check without a query) the method runs through
 *   `elector.runIfLeader`, with the current {@link Lease} appended after the arguments it was
 *   called with: `@Interval` and `@Timeout` call without arguments, so the lease is the first
 *   parameter; `@Cron` passes one (cron's `onComplete`, usually undefined), so the lease is the
 *   second. Use `lease.signal` to stop long work when leadership ends and `lease.term` to fence
 *   writes with `assertLeader`.
 * - Elsewhere the method is skipped.
 * - Either way the decorated method returns a Promise: of the method's result on the leader, of
 *   `undefined` when skipped. The method's own errors reject it.
 *
 * The elector is the one `ElectionModule` provides to the application that created the instance
 * (Nest injects it into a hidden property), so several applications in one process each use their
 * own. The class must be a provider or controller of an application that imports `ElectionModule`
 * (global by default); calling the method on an instance Nest did not create throws
 * {@link LeaderOnlyWithoutElectorError}. Decorator order with `@Cron`/`@Interval` does not matter.
 */
export function LeaderOnly(): MethodDecorator {
  return (target: object, key: string | symbol, descriptor: PropertyDescriptor) => {
    const original = descriptor.value as unknown;
    if (typeof original !== 'function') throw new ValidationError('@LeaderOnly()', `decorates methods only (${String(key)} is not one)`);
    const className = (target as { constructor?: { name?: string } }).constructor?.name ?? 'anonymous class';
    const method = original as Method;
    const wrapper: Method = function (this: unknown, ...args: unknown[]) {
      const elector = (this as { [ELECTOR]?: LeaderElector } | undefined)?.[ELECTOR];
      if (!elector) {
        throw new LeaderOnlyWithoutElectorError(
          `@LeaderOnly() ${className}.${String(key)} has no LeaderElector: it runs only on instances Nest created in an application that imports ElectionModule`,
        );
      }
      return elector.runIfLeader((lease: Lease) => method.apply(this, [...args, lease]));
    };
    Object.defineProperty(wrapper, 'name', { value: method.name });
    copyMetadata(method, wrapper);
    const owner = (target as { constructor: object }).constructor;
    if (!Reflect.hasOwnMetadata(INJECTION_DECLARED, owner)) {
      Reflect.defineMetadata(INJECTION_DECLARED, true, owner);
      Inject(LeaderElector)(target, ELECTOR);
    }
    descriptor.value = wrapper;
    return descriptor;
  };
}
