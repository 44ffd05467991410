/**
 * Tables that fit on a screen: no cell of a table in README.md or docs/*.md holds more than
 * MAX_CELL_WORDS words. A longer entry belongs in a list or a section of its own, where it wraps
 * at the reader's width instead of stretching one row over several screens. Pure file reading.
 */
import * as fs from 'fs';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '..', '..');
/** About six lines of a table column at a common width: past that, a row is read by scrolling. */
const MAX_CELL_WORDS = 60;

function documents(): string[] {
  const docs = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/** `doc:line: N words: start of the cell` for every cell over the limit, outside code blocks. */
function longCells(doc: string): string[] {
  const found: string[] = [];
  let fenced = false;
  fs.readFileSync(path.join(ROOT, doc), 'utf8')
    .split(/\r?\n/)
    .forEach((line, i) => {
      if (/^\s*(`{3,}|~{3,})/.test(line)) fenced = !fenced;
      if (fenced || !line.startsWith('|')) return;
      // Cells split at pipes that are not escaped (`\|` is a pipe inside a cell).
      for (const cell of line.split(/(?<!\\)\|/).slice(1, -1)) {
        const words = cell.trim().split(/\s+/).filter((word) => word !== '').length;
        if (words > MAX_CELL_WORDS) found.push(`${doc}:${i + 1}: ${words} words: ${cell.trim().slice(0, 60)}…`);
      }
    });
  return found;
}

test(`no table cell in the docs has more than ${MAX_CELL_WORDS} words`, () => {
  expect(documents().flatMap(longCells)).toEqual([]);
});
