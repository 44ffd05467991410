/**
 * The packed tarball as a consumer gets it: `npm pack`, installed into a scratch project without
 * network, run from CommonJS and ES modules, and type-checked under strict settings in every
 * module resolution mode, with TypeScript 5 (`tsc`) and, where installed, TypeScript 7 (`tsgo`).
 * TypeScript 7 itself (`typescript@7`, test/typescript7) compiles the typed consumer and every
 * ts block of README.md and docs/ as a user's project would: one made by `tsc --init`, one with
 * a classic strict CommonJS tsconfig — both without `types`, which TypeScript 7 defaults to `[]`.
 */
import * as fs from 'fs';
import * as path from 'path';
import { REPO_ROOT } from '../support/children/spawn';
import { blockFileName, documentsWithSnippets, documentTsBlocks } from '../support/markdown';
import { packageDir } from '../support/packages';
import {
  createConsumer,
  DocSnippet,
  mapLimited,
  packRepo,
  ProcessResult,
  runProgram,
  TypeCheckSetting,
  writeSnippetProject,
  writeTypeCheckProject,
  Packed,
} from './consumer-project';

const SETTINGS: readonly TypeCheckSetting[] = [
  { name: 'commonjs-node10', module: 'commonjs', moduleResolution: 'node10', packageType: 'commonjs' },
  { name: 'node16-cjs', module: 'node16', moduleResolution: 'node16', packageType: 'commonjs' },
  { name: 'node16-esm', module: 'node16', moduleResolution: 'node16', packageType: 'module' },
  { name: 'nodenext-cjs', module: 'nodenext', moduleResolution: 'nodenext', packageType: 'commonjs' },
  { name: 'nodenext-esm', module: 'nodenext', moduleResolution: 'nodenext', packageType: 'module' },
  { name: 'preserve-bundler', module: 'preserve', moduleResolution: 'bundler', packageType: 'module' },
];

const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const TSGO = path.join(packageDir('@typescript/native-preview'), 'bin', 'tsgo');
const HAS_TSGO = fs.existsSync(TSGO);
/** TypeScript 7 removed `moduleResolution: node10` (error TS5108), so that row is TypeScript 5 only. */
const TSGO_SETTINGS = SETTINGS.filter((setting) => setting.moduleResolution !== 'node10');

/**
 * TypeScript 7 itself, installed apart (`npm ci --prefix test/typescript7`): as a devDependency
 * its `tsc` command would replace TypeScript 5's, which builds the package. Required under CI.
 */
const TSC7 = path.join(REPO_ROOT, 'test', 'typescript7', 'node_modules', 'typescript', 'bin', 'tsc');
const HAS_TSC7 = fs.existsSync(TSC7);
const RUN_TSC7 = HAS_TSC7 || process.env['CI'] === 'true';

/**
 * TypeORM and Nest decorators are TypeScript's legacy decorators: both ask their users for these
 * two options, which `tsc --init` does not set.
 */
const DECORATOR_OPTIONS = { experimentalDecorators: true, emitDecoratorMetadata: true };

/** The TypeScript 7 projects: the typed consumer and every ts block of the documentation. */
interface Ts7Project {
  readonly name: string;
  readonly packageType: 'commonjs' | 'module';
  /** Written as given; absent: the project's tsconfig.json is the one `tsc --init` writes. */
  readonly tsconfig?: object;
  /** Options added on the command line (to `tsc --init`'s tsconfig). */
  readonly args: readonly string[];
}

const TS7_PROJECTS: readonly Ts7Project[] = [
  // `tsc --init` as it is (module nodenext, target esnext, types [], verbatimModuleSyntax,
  // noUncheckedIndexedAccess, exactOptionalPropertyTypes, strict, skipLibCheck) in an ES module
  // package: verbatimModuleSyntax allows no `import` in CommonJS files.
  { name: 'ts7-init', packageType: 'module', args: ['--noEmit', '--experimentalDecorators', '--emitDecoratorMetadata'] },
  // The classic strict CommonJS project. TypeScript 7 removed moduleResolution node10 (error
  // TS5108), so `module: commonjs` resolves with its default; every declaration file is checked.
  {
    name: 'ts7-commonjs',
    packageType: 'commonjs',
    tsconfig: {
      compilerOptions: { target: 'es2022', module: 'commonjs', strict: true, exactOptionalPropertyTypes: true, skipLibCheck: false, noEmit: true, ...DECORATOR_OPTIONS },
    },
    args: [],
  },
];

/** Every ts block of README.md and docs/*.md. */
function docSnippets(): DocSnippet[] {
  return documentsWithSnippets(REPO_ROOT).flatMap((doc) =>
    documentTsBlocks(REPO_ROOT, doc).map((block) => ({ origin: `${doc}:${block.firstLine}`, file: blockFileName(doc, block), code: block.code })),
  );
}

interface Checked {
  readonly compiler: 'tsc' | 'tsgo' | 'typescript@7';
  readonly setting: string;
  readonly result: ProcessResult;
}

type Job = { compiler: 'tsc' | 'tsgo'; setting: TypeCheckSetting } | { project: Ts7Project };

let packed: Packed;
let consumer: string;
let cjs: Promise<ProcessResult>;
let dashboard: Promise<ProcessResult>;
let esm: Promise<ProcessResult>;
let checks: Promise<Checked[]>;

beforeAll(async () => {
  packed = await packRepo();
  consumer = await createConsumer(packed);
  fs.copyFileSync(path.join(__dirname, 'consumer', 'run.cjs'), path.join(consumer, 'run.cjs'));
  fs.copyFileSync(path.join(__dirname, 'consumer', 'run.mjs'), path.join(consumer, 'run.mjs'));
  fs.copyFileSync(path.join(__dirname, 'consumer', 'dashboard.cjs'), path.join(consumer, 'dashboard.cjs'));
  const jobs: { compiler: 'tsc' | 'tsgo'; setting: TypeCheckSetting }[] = [
    ...SETTINGS.map((setting) => ({ compiler: 'tsc' as const, setting })),
    ...(HAS_TSGO ? TSGO_SETTINGS.map((setting) => ({ compiler: 'tsgo' as const, setting })) : []),
  ];
  for (const { setting } of jobs) writeTypeCheckProject(consumer, setting, path.join(__dirname, 'consumer', 'typed.ts'));
  // Child processes: the runtime checks and two compilers at a time overlap on the machine's cores.
  cjs = runProgram(process.execPath, ['run.cjs'], consumer);
  dashboard = runProgram(process.execPath, ['dashboard.cjs'], consumer);
  esm = runProgram(process.execPath, ['run.mjs'], consumer);
  const snippets = docSnippets();
  const ts7Jobs = HAS_TSC7 ? TS7_PROJECTS : [];
  for (const project of ts7Jobs) {
    writeSnippetProject(consumer, project.name, project.packageType, path.join(__dirname, 'consumer', 'typed.ts'), snippets, project.tsconfig);
  }
  const compile = async (compiler: Checked['compiler'], setting: string, args: string[], cwd = consumer): Promise<Checked> => {
    const bin = compiler === 'tsc' ? TSC : compiler === 'tsgo' ? TSGO : TSC7;
    return { compiler, setting, result: await runProgram(process.execPath, [bin, ...args], cwd) };
  };
  checks = mapLimited<Job, Checked>([...jobs, ...ts7Jobs.map((project) => ({ project }))], 2, async (job) => {
    if ('setting' in job) return compile(job.compiler, job.setting.name, ['-p', path.join(job.setting.name, 'tsconfig.json')]);
    const dir = path.join(consumer, job.project.name);
    if (!job.project.tsconfig) {
      const init = await runProgram(process.execPath, [TSC7, '--init'], dir);
      if (init.code !== 0) return { compiler: 'typescript@7', setting: job.project.name, result: init };
    }
    return compile('typescript@7', job.project.name, ['-p', '.', ...job.project.args], dir);
  });
  for (const pending of [cjs, esm, checks, dashboard]) pending.catch(() => undefined);
}, 60_000);

afterAll(() => {
  for (const dir of [packed?.dir, consumer]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  test('holds the built package, its declarations, docs and legal files', () => {
    const required = [
      'package.json',
      'LICENSE',
      'README.md',
      'CHANGELOG.md',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/db/index.js',
      'dist/src/db/index.d.ts',
      'dist/src/election/index.js',
      'dist/src/election/index.d.ts',
    ];
    expect(required.filter((file) => !packed.files.includes(file))).toEqual([]);
    for (const dir of ['dist/entities/', 'dist/migrations/', 'docs/']) {
      expect(packed.files.some((file) => file.startsWith(dir))).toBe(true);
    }
  });

  // dist/ is packed as built: `build` alone leaves files of earlier builds behind, which is why
  // `pretest` and `prepare` clean first (a stale dist/ with .map files fails here).
  test('holds no source maps, TypeScript sources, tests, benchmarks or tools', () => {
    const unwanted = packed.files.filter(
      (file) =>
        file.endsWith('.map') ||
        (file.endsWith('.ts') && !file.endsWith('.d.ts')) ||
        /^(src|test|bench|tools|examples|node_modules|\.ci)\//.test(file) ||
        /^dist\/(test|bench|tools)\//.test(file),
    );
    expect(unwanted).toEqual([]);
  });
});

describe('a consumer project with the tarball installed', () => {
  const expected = (resolved: string) => ({ resolved, elected: true, term: 1, electorTerm: 1, sameRegistry: true });
  /**
   * What an elector on SQLite tells a consumer on stderr: the process warning, once (only processes
   * sharing the file take part), and nothing else.
   */
  const expectLocalElectionWarningOnly = (stderr: string) => {
    expect(stderr.match(/\[GEMSTONE_SQLITE_LOCAL_ELECTION\] GemstoneWarning/g)).toHaveLength(1);
    const other = stderr.split('\n').filter((line) => line.trim() !== '' && !/GEMSTONE_SQLITE_LOCAL_ELECTION|--trace-warnings/.test(line));
    expect(other).toEqual([]);
  };

  test('a CommonJS script runs an election on sqlite::memory:', async () => {
    const result = await cjs;
    expect({ code: result.code, output: result.code === 0 ? '' : result.output }).toEqual({ code: 0, output: '' });
    const installed = path.join(fs.realpathSync(consumer), 'node_modules', 'gemstone-utils', 'dist', 'src', 'index.js');
    expect(JSON.parse(result.stdout)).toEqual(expected(installed));
    expectLocalElectionWarningOnly(result.stderr);
  });

  test("the dashboard serves its page, the page's scripts and JSON from the installed package", async () => {
    const result = await dashboard;
    expect({ code: result.code, output: result.code === 0 ? '' : result.output }).toEqual({ code: 0, output: '' });
    expect(JSON.parse(result.output)).toEqual({ page: true, scripts: [200, 200, 200, 200, 200], namespaces: ['cjs-dashboard'] });
  });

  test('an ES module runs an election on sqlite::memory:', async () => {
    const result = await esm;
    expect({ code: result.code, output: result.code === 0 ? '' : result.output }).toEqual({ code: 0, output: '' });
    const installed = new URL(`file://${path.join(fs.realpathSync(consumer), 'node_modules', 'gemstone-utils', 'dist', 'src', 'index.js')}`).href;
    expect(JSON.parse(result.stdout)).toEqual(expected(installed));
    expectLocalElectionWarningOnly(result.stderr);
  });

  // strict + exactOptionalPropertyTypes + skipLibCheck: false + types: ['node'], without pg or
  // @types/pg installed (a SQLite user has neither): every declaration file the entry points
  // reach must type-check, so none may import types from an optional driver. These fail while
  // dist/src/databases/postgres/listener.d.ts (reached through the LISTEN constants that
  // election/index.ts re-exports) declares an exported function returning pg's `ClientConfig`:
  // "Cannot find module 'pg'". They pass once that declaration no longer names a 'pg' type.
  // The first test awaits the whole matrix: ~35 s on two idle cores, minutes beside the full suite.
  const matrixTimeoutMs = 240_000;
  test.each(SETTINGS.map((setting) => [setting.name]))(
    'TypeScript 5 (tsc) type-checks the consumer under %s',
    async (name) => {
      const check = (await checks).find((entry) => entry.compiler === 'tsc' && entry.setting === name)!;
      expect({ code: check.result.code, output: check.result.output }).toEqual({ code: 0, output: '' });
    },
    matrixTimeoutMs,
  );

  (HAS_TSGO ? test.each : test.skip.each)(TSGO_SETTINGS.map((setting) => [setting.name]))(
    'TypeScript 7 (tsgo) type-checks the consumer under %s',
    async (name) => {
      const check = (await checks).find((entry) => entry.compiler === 'tsgo' && entry.setting === name)!;
      expect({ code: check.result.code, output: check.result.output }).toEqual({ code: 0, output: '' });
    },
    matrixTimeoutMs,
  );

  // TypeScript 7 with its defaults (types: []): the declarations bring Node's types themselves
  // (`/// <reference types="node" />` where they use them). These failed with 35 errors in
  // dist/ ("Cannot find namespace 'NodeJS'", "Cannot find name 'events'", "Property
  // 'asyncDispose' does not exist") and, under `tsc --init`, "Property 'on' does not exist on
  // type 'LeaderElector'" in the README's snippets.
  (RUN_TSC7 ? test.each : test.skip.each)(TS7_PROJECTS.map((project) => [project.name]))(
    'TypeScript 7 (typescript@7) compiles the typed consumer and every ts block of the docs in %s',
    async (name) => {
      if (!HAS_TSC7) throw new Error(`${TSC7} is missing: run \`npm ci --prefix test/typescript7\``);
      const check = (await checks).find((entry) => entry.compiler === 'typescript@7' && entry.setting === name)!;
      expect({ code: check.result.code, output: check.result.output }).toEqual({ code: 0, output: '' });
    },
    matrixTimeoutMs,
  );
});
