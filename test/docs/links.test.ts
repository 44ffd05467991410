/**
 * Every relative link of README.md, CHANGELOG.md and docs/*.md resolves: the file (or directory)
 * exists in the repository, and a `#anchor` names a heading of the target document, slugged as
 * GitHub renders it. Links inside code blocks and inline code are not links and are skipped;
 * absolute URLs are not checked (no network). Pure file reading: no database, no build.
 */
import * as fs from 'fs';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '..', '..');

/** The documents whose links are checked, relative to the repository. */
function documents(): string[] {
  const docs = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
  return ['README.md', 'CHANGELOG.md', ...docs];
}

/** The document's lines with fenced code blocks blanked out (line numbers kept). */
function proseLines(markdown: string): string[] {
  let fence: string | null = null;
  return markdown.split(/\r?\n/).map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === null) {
      if (marker === undefined) return line;
      fence = marker;
      return '';
    }
    if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = null;
    return '';
  });
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a document offers: one per heading, repeated headings numbered `-1`, `-2`, … */
function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of proseLines(fs.readFileSync(file, 'utf8'))) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

interface Link {
  readonly doc: string;
  readonly line: number;
  readonly target: string;
}

/** Inline links `[text](target)` and images `![alt](target)` outside code. */
function linksOf(doc: string): Link[] {
  const links: Link[] = [];
  proseLines(fs.readFileSync(path.join(ROOT, doc), 'utf8')).forEach((text, i) => {
    const prose = text.replace(/`[^`]*`/g, '``');
    for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ doc, line: i + 1, target: match[1] as string });
    }
  });
  return links;
}

/** Why `link` does not resolve, or null when it does. */
function problem(link: Link): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) return null; // http:, https:, mailto:
  const [rawPath = '', anchor] = link.target.split('#', 2);
  const file = rawPath === '' ? path.join(ROOT, link.doc) : path.resolve(path.dirname(path.join(ROOT, link.doc)), decodeURIComponent(rawPath));
  if (!file.startsWith(ROOT + path.sep) && file !== ROOT) return 'points outside the repository';
  if (!fs.existsSync(file)) return `${path.relative(ROOT, file)} does not exist`;
  if (anchor === undefined) return null;
  if (!file.endsWith('.md')) return `#${anchor} on a file that is not Markdown`;
  return anchorsOf(file).has(anchor) ? null : `${path.relative(ROOT, file)} has no heading #${anchor}`;
}

describe('relative links in README.md, CHANGELOG.md and docs/', () => {
  test('slugs follow GitHub', () => {
    expect(slug('The worker loop: `LeaderElector`')).toBe('the-worker-loop-leaderelector');
    expect(slug("What is and isn't guaranteed")).toBe('what-is-and-isnt-guaranteed');
    expect(slug('Upgrading from 0.1.0')).toBe('upgrading-from-010');
    expect(slug('Poolers (PgBouncer)')).toBe('poolers-pgbouncer');
    expect(slug('`watch`: a stream of leadership changes')).toBe('watch-a-stream-of-leadership-changes');
  });

  test('every link finds its file and heading', () => {
    const links = documents().flatMap(linksOf);
    expect(links.length).toBeGreaterThan(50); // the extraction found the documents' links
    const broken = links.flatMap((link) => {
      const why = problem(link);
      return why === null ? [] : [`${link.doc}:${link.line} (${link.target}): ${why}`];
    });
    expect(broken).toEqual([]);
  });

  test('a broken link is caught', () => {
    const doc = 'docs/api.md';
    expect(problem({ doc, line: 1, target: 'protocol.md#no-such-heading' })).toMatch(/no heading/);
    expect(problem({ doc, line: 1, target: 'no-such-file.md' })).toMatch(/does not exist/);
    expect(problem({ doc, line: 1, target: 'protocol.md#what-is-and-isnt-guaranteed' })).toBeNull();
    expect(problem({ doc, line: 1, target: '#watch-and-history' })).toBeNull();
  });
});
