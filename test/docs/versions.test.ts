/**
 * The docs name the version package.json has: a packed tarball `gemstone-utils-X.Y.Z.tgz` in
 * README.md or docs/*.md is the one `npm pack` makes of this checkout. Pure file reading.
 */
import * as fs from 'fs';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '..', '..');

test('every gemstone-utils-X.Y.Z.tgz in the docs is the version of package.json', () => {
  const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const documents = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const named = documents.flatMap((doc) =>
    [...fs.readFileSync(path.join(ROOT, doc), 'utf8').matchAll(/gemstone-utils-(\d+\.\d+\.\d+[^\s/]*?)\.tgz/g)].map((m) => `${doc}: ${m[1]}`),
  );
  expect(named.length).toBeGreaterThan(0);
  expect(named.filter((entry) => !entry.endsWith(`: ${version}`))).toEqual([]);
});
