// The order jest starts the test files in: the longest first, so that the end of a run is not one
// long file running alone while the other workers sit idle. Jest's own sequencer knows a file's
// duration only from an earlier run on the same checkout (its cache, keyed by the folder's
// path): a clean clone, as CI runs, has none, and jest falls back to file size — which put the
// differential runs (small files, 70–96 s each) at the very end of the suite, alone.
// Here a file's duration is jest's cached one when known, else the one recorded in
// test/support/durations.json (seconds, from a CI run's `PASS <file> (<seconds> s)` lines; a file
// not listed counts as 0 and runs after those that are, by size, as jest orders them).
// Failed files of the last run still come first, as with jest's sequencer.
'use strict';
const path = require('path');
const { TEST_MODULES } = require('./packages');

const Sequencer = require(path.join(TEST_MODULES, '@jest', 'test-sequencer')).default;
const RECORDED = require('./durations.json');

class LongestFirst extends Sequencer {
  sort(tests) {
    const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
    const key = new Map();
    for (const test of tests) {
      const recorded = RECORDED[path.relative(test.context.config.rootDir, test.path).split(path.sep).join('/')];
      const cached = this.time(test);
      test.duration = cached ?? (recorded === undefined ? undefined : recorded * 1000);
      key.set(test, { failed: this.hasFailed(test), duration: test.duration ?? 0, size: size(test) });
    }
    return [...tests].sort((a, b) => {
      const [ka, kb] = [key.get(a), key.get(b)];
      if (ka.failed !== kb.failed) return ka.failed ? -1 : 1;
      if (ka.duration !== kb.duration) return kb.duration - ka.duration;
      return kb.size - ka.size;
    });
  }
}

module.exports = LongestFirst;
