#!/usr/bin/env node
// Prints the failures of a CI run's log, for its last lines: a CI viewer that keeps the head and
// the tail of a long log cuts the middle, where jest printed why a test failed (a test:ha failure
// was lost that way). For each `FAIL <file>` the file, and each failed test's block (`● title`
// and what follows, up to the next block), skipping `● Console` blocks, and the smoke benchmark's
// correctness failures; at most MAX_LINES lines in all, each block at most BLOCK_LINES.
// Usage: node tools/ci-failures.js <log file>
const fs = require('fs');

const MAX_LINES = 400;
const BLOCK_LINES = 80;
// The stage table's `ci:` lines and jest's summary lines stay useful beside the blocks.
const KEEP = /^(ci: .*(exit|exited) [1-9]|npm test: failed|Tests: .*failed|Test Suites: .*failed)/;

function digest(text) {
  // eslint-disable-next-line no-control-regex
  const lines = text.replace(/\x1b\[[0-9;]*m/g, '').split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^FAIL /.test(line) || KEEP.test(line.trim())) {
      out.push(line);
      continue;
    }
    // The smoke benchmark's verdict: its correctness failures, one `  - ` line each.
    if (/^bench: \d+ correctness failure/.test(line)) {
      out.push(line);
      for (let j = i + 1; j < lines.length && /^ {2}- /.test(lines[j]); j++) out.push(lines[j].slice(0, 1000));
      continue;
    }
    const block = /^(\s*)● (.*)$/.exec(line);
    if (!block || /^Console\s*$/.test(block[2])) continue;
    const indent = block[1].length;
    const taken = [line];
    for (let j = i + 1; j < lines.length; j++) {
      const next = lines[j];
      // The block ends at the next `●` at its indent or less, or at a line that starts at column 0
      // (jest's next file, or another stage's output).
      const nextBlock = /^(\s*)● /.exec(next);
      if ((nextBlock && nextBlock[1].length <= indent) || /^\S/.test(next)) break;
      if (taken.length < BLOCK_LINES) taken.push(next);
      else if (taken.length === BLOCK_LINES) taken.push(`${' '.repeat(indent)}  […]`);
    }
    out.push(...taken);
  }
  return out;
}

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node tools/ci-failures.js <log file>\n');
  process.exit(2);
}
const lines = digest(fs.readFileSync(file, 'utf8'));
const shown = lines.length > MAX_LINES ? [...lines.slice(0, MAX_LINES), `[… ${lines.length - MAX_LINES} more lines]`] : lines;
process.stdout.write(`\nci: what failed (from the whole log; each test's message as jest printed it)\n${shown.join('\n')}\n`);
