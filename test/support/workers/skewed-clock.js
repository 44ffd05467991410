// Preload (node -r) for worker processes whose application wall clock disagrees with the others':
// shifts Date.now() and new Date() (without arguments) by GEMSTONE_TEST_CLOCK_SKEW_MS. Test
// harness only. Timers, performance.now() and the database's clock are untouched, so whatever
// comes due by the database's clock must not move with it.
'use strict';
const skew = Number(process.env.GEMSTONE_TEST_CLOCK_SKEW_MS || 0);
if (!Number.isFinite(skew)) throw new Error(`GEMSTONE_TEST_CLOCK_SKEW_MS must be a number (got ${process.env.GEMSTONE_TEST_CLOCK_SKEW_MS})`);
if (skew !== 0) {
  const RealDate = Date;
  const now = () => RealDate.now() + skew;
  // A Proxy rather than a subclass: `instanceof Date` and Date.prototype stay the real ones, so
  // dates made anywhere (drivers included) are alike.
  globalThis.Date = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      return Reflect.construct(target, args.length === 0 ? [now()] : args, newTarget === globalThis.Date ? target : newTarget);
    },
    apply() {
      return new RealDate(now()).toString();
    },
    get(target, property) {
      return property === 'now' ? now : Reflect.get(target, property, target);
    },
  });
}
