/**
 * The TypeORM 0.3 run leaves out only the test files test/support/typeorm-lines.js names, each
 * under a reason: every listed file exists, is listed once and is left out by the jest config of
 * that run and by no other; a file said to be pure loads neither TypeORM nor a database; a file
 * that names the TypeORM line (it behaves differently on it, by its own account) is never left
 * out; the files a group relies on for its TypeORM surface run on 0.3. A test file the list does
 * not name runs on both lines, so a new file cannot leave the 0.3 run unnoticed.
 */
import { readdirSync, readFileSync } from 'fs';
import { join, relative, resolve } from 'path';

interface Group {
  kind: 'pure' | 'covered';
  reason: string;
  coveredBy?: string[];
  files: string[];
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const lines = require('../support/typeorm-lines') as {
  ONE_LINE_ONLY: Group[];
  oneLineOnlyFiles: () => string[];
  lineIgnorePatterns: (env?: Record<string, string | undefined>) => string[];
};

const ROOT = resolve(__dirname, '../..');

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules') return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(ROOT, path)] : [];
  });
}

/**
 * Every test file of the suite's jest runs. test/ha/ and the packed package's test have runs of
 * their own (`npm run test:ha`, `npm run test:package`), on TypeORM 1.x only.
 */
const ALL = testFiles(join(ROOT, 'test')).filter((file) => !file.startsWith('test/ha/') && file !== 'test/package/consumer.test.ts');
const LISTED = lines.oneLineOnlyFiles();

/** Comments removed (line and block): a word in a comment is no dependency. */
function code(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** The jest config a run with `env` gets (it reads the environment when it is loaded). */
function configUnder(env: Record<string, string>): { testPathIgnorePatterns: string[] } {
  const saved = { ...process.env };
  // Only `env` decides: this file runs on either line, selecting or not.
  delete process.env.GEMSTONE_TYPEORM_LINE;
  delete process.env.GEMSTONE_TYPEORM_LINE_SELECT;
  Object.assign(process.env, env);
  try {
    let config: { testPathIgnorePatterns: string[] } | undefined;
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      config = require('../../jest.config.js');
    });
    return config!;
  } finally {
    for (const key of ['GEMSTONE_TYPEORM_LINE', 'GEMSTONE_TYPEORM_LINE_SELECT', ...Object.keys(env)]) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

const ignoredBy = (patterns: string[], file: string) => patterns.some((pattern) => new RegExp(pattern).test(join(ROOT, file)));

describe('the test files of the TypeORM 0.3 run', () => {
  it('lists existing test files of the suite, each once, in groups with a kind and a one-line reason', () => {
    expect(LISTED.length).toBeGreaterThan(0);
    expect(LISTED.filter((file) => !ALL.includes(file))).toEqual([]);
    expect(LISTED.filter((file, i) => LISTED.indexOf(file) !== i)).toEqual([]);
    for (const group of lines.ONE_LINE_ONLY) {
      expect(['pure', 'covered']).toContain(group.kind);
      expect(group.reason).toMatch(/^[^\n]{20,}$/);
      expect(group.files.length).toBeGreaterThan(0);
    }
  });

  it('leaves out exactly the listed files on the 0.3 run of the npm script, and none on the other runs', () => {
    const selecting = configUnder({ GEMSTONE_TYPEORM_LINE: '0.3', GEMSTONE_TYPEORM_LINE_SELECT: '1' }).testPathIgnorePatterns;
    // Every file of the suite is classified: left out because listed, or run on both lines.
    expect(ALL.filter((file) => ignoredBy(selecting, file) !== LISTED.includes(file))).toEqual([]);
    const onBoth = ALL.filter((file) => !LISTED.includes(file));
    expect(onBoth.length).toBeGreaterThan(LISTED.length);
    // A developer's run of one file on 0.3, and the 1.x run, leave nothing out.
    const others: Array<Record<string, string>> = [{ GEMSTONE_TYPEORM_LINE: '0.3' }, { GEMSTONE_TYPEORM_LINE_SELECT: '1' }, {}];
    for (const env of others) {
      const patterns = configUnder(env).testPathIgnorePatterns;
      expect(ALL.filter((file) => ignoredBy(patterns, file))).toEqual([]);
    }
  });

  it('says that of a pure file only when it loads neither TypeORM nor a database nor a child process', () => {
    const loads = /['"](typeorm|gemstone-utils(\/db)?|child_process|[./]*support\/databases|[./]*support\/children\/spawn|\.\/cli)['"]|\binitDb\b|\bDataSource\b/;
    const pure = lines.ONE_LINE_ONLY.filter((group) => group.kind === 'pure').flatMap((group) => group.files);
    expect(pure.filter((file) => loads.test(code(file)))).toEqual([]);
  });

  it('never leaves out a file that names the TypeORM line (it behaves differently on it)', () => {
    expect(LISTED.filter((file) => /TYPEORM_LINE|typeorm03/.test(code(file)))).toEqual([]);
    // The scan finds such files where they are: it is not vacuous.
    expect(ALL.filter((file) => /TYPEORM_LINE|typeorm03/.test(code(file))).length).toBeGreaterThan(3);
  });

  it('relies, for the TypeORM surface of a left-out group, on files that run on 0.3', () => {
    for (const group of lines.ONE_LINE_ONLY.filter((g) => g.kind === 'covered')) {
      expect(group.coveredBy?.length ?? 0).toBeGreaterThan(0);
      expect(group.coveredBy!.filter((file) => !ALL.includes(file) || LISTED.includes(file))).toEqual([]);
    }
  });
});
