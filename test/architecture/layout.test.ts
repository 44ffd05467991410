/**
 * The layout the code promises (docs/development.md): everything one database does differently
 * lives in its folder under src/databases/, the shared code never names a database nor imports a
 * database folder, and no module imports itself back through others (type-only imports included).
 */
import { readdirSync, readFileSync } from 'fs';
import { dirname, join, relative, resolve } from 'path';

const ROOT = resolve(__dirname, '../..');
const SRC = join(ROOT, 'src');
const DATABASES = join(SRC, 'databases');
const DATABASE_FOLDERS = ['postgres', 'mysql', 'sqlite'].map((name) => join(DATABASES, name));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Comments removed (line and block), strings kept: a database named in a comment is no branch. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/**
 * Relative module specifiers of a file's code: static imports and re-exports (`import type` and
 * `export … from` included), side-effect imports, `import('…')` (also as a type) and
 * `require('…')`, in either quote style.
 */
const SPECIFIER = /(?:\b(?:import|export)\s[^;]*?\bfrom|\bimport|\bimport\s*\(|\brequire\s*\()\s*(['"])(\.[^'"]*)\1/g;
const specifiersOf = (text: string): string[] => [...code(text).matchAll(SPECIFIER)].map((m) => m[2]!);

/** Relative imports of a file resolved to files; throws on one that resolves to none (a broken scanner or layout). */
function importsOf(file: string): string[] {
  // Data files (package.json) are no modules of the layout.
  return specifiersOf(readFileSync(file, 'utf8')).filter((spec) => !spec.endsWith('.json')).map((spec) => {
    const base = resolve(dirname(file), spec);
    const found = [base, `${base}.ts`, join(base, 'index.ts')].find((candidate) => FILES.has(candidate));
    if (!found) throw new Error(`${relative(ROOT, file)}: import '${spec}' resolves to no source file`);
    return found;
  });
}

const FILES = new Set([...sources(SRC), ...sources(join(ROOT, 'migrations')), ...sources(join(ROOT, 'entities'))].filter((file) => !file.includes(`${join('src', 'dashboard', 'client')}`)));
const GRAPH = new Map([...FILES].map((file) => [file, importsOf(file)]));
const inside = (file: string, folder: string) => file.startsWith(`${folder}/`);
const name = (file: string) => relative(ROOT, file);

describe('layout', () => {
  // The other tests pass vacuously on an empty graph: a scanner that stopped matching (a quote
  // style, a new form of import) must fail here instead.
  it('finds an edge for every relative module path in the code, hundreds of them', () => {
    // Counted without the scanner: every quoted string that starts with ./ or ../ (module paths
    // are the only ones the code has), data files (package.json) aside.
    const literals = [...FILES].flatMap((file) => code(readFileSync(file, 'utf8')).match(/(['"])\.\.?\/[^'"]*\1/g) ?? []).filter((l) => !l.endsWith(".json'") && !l.endsWith('.json"'));
    const edges = [...GRAPH.values()].reduce((n, imports) => n + imports.length, 0);
    expect(edges).toBe(literals.length);
    const inSrc = [...GRAPH].filter(([file]) => inside(file, SRC)).reduce((n, [, imports]) => n + imports.length, 0);
    expect(inSrc).toBeGreaterThan(300);
  });

  it('has no import circle', () => {
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        circles.push([...path.slice(path.indexOf(file)), file].map(name).join(' -> '));
        return;
      }
      state.set(file, 'open');
      for (const next of GRAPH.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of FILES) visit(file, []);
    expect(circles).toEqual([]);
  });

  it('imports a database folder only from src/databases/index.ts', () => {
    const offenders = [...GRAPH].flatMap(([file, imports]) =>
      imports
        .filter((target) => DATABASE_FOLDERS.some((folder) => inside(target, folder)))
        .filter(() => !DATABASE_FOLDERS.some((folder) => inside(file, folder)) && file !== join(DATABASES, 'index.ts'))
        .map((target) => `${name(file)} imports ${name(target)}`),
    );
    expect(offenders).toEqual([]);
  });

  it('keeps each database folder to itself', () => {
    const offenders = [...GRAPH].flatMap(([file, imports]) => {
      const own = DATABASE_FOLDERS.find((folder) => inside(file, folder));
      if (!own) return [];
      return imports
        .filter((target) => DATABASE_FOLDERS.some((folder) => folder !== own && inside(target, folder)))
        .map((target) => `${name(file)} imports ${name(target)}`);
    });
    expect(offenders).toEqual([]);
  });

  it('keeps the database folders below the loop layer and the entry points built on it', () => {
    const above = ['election/loop', 'dashboard', 'nestjs', 'cli'].map((folder) => join(SRC, folder));
    const offenders = [...GRAPH].flatMap(([file, imports]) =>
      DATABASE_FOLDERS.some((folder) => inside(file, folder))
        ? imports.filter((target) => above.some((folder) => inside(target, folder))).map((target) => `${name(file)} imports ${name(target)}`)
        : [],
    );
    expect(offenders).toEqual([]);
  });

  it('names no database outside src/databases/ (src/, migrations/, entities/)', () => {
    const named = /'(postgres|mysql|mariadb|sqlite|sqlite3|better-sqlite3)'|\b(d|dialect)\.name\s*[!=]==?|switch \((\w+\.)*(d|dialect)\.name\)|options\.type\s*[!=]==?/;
    const offenders = [...FILES]
      .filter((file) => !inside(file, DATABASES))
      .flatMap((file) =>
        code(readFileSync(file, 'utf8'))
          .split('\n')
          .filter((line) => named.test(line))
          .map((line) => `${name(file)}: ${line.trim()}`),
      );
    expect(offenders).toEqual([]);
  });
});
