// Preloaded into a CLI process to move its host clock one hour ahead: whatever the CLI computes
// from the database clock must not change.
'use strict';
const SKEW_MS = 3_600_000;
const RealDate = Date;
const realNow = RealDate.now;
class SkewedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(realNow() + SKEW_MS);
    else super(...args);
  }
  static now() {
    return realNow() + SKEW_MS;
  }
}
global.Date = SkewedDate;
