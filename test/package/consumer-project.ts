/**
 * A scratch consumer project in a temp dir that installs the packed tarball the way npm would lay
 * it out, without network: the tarball is extracted to node_modules/gemstone-utils and the peer
 * and dev packages a consumer would install are symlinked from the repo's installs (the root's
 * and test/'s node_modules). `pg` and
 * `@types/pg` are left out on purpose: a SQLite user installs neither.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';
import { REPO_ROOT } from '../support/children/spawn';
import { packageDir } from '../support/packages';

const run = promisify(execFile);

/**
 * What a SQLite consumer installs besides gemstone-utils: its dependencies (read from its
 * package.json, so a new one is linked too), the peers, and the optional peers the documentation's
 * examples use (Nest, prom-client, OpenTelemetry).
 */
const LINKED_PACKAGES = [
  ...Object.keys((JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies),
  'typeorm',
  'reflect-metadata',
  'better-sqlite3',
  'typescript',
  '@types/node',
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/typeorm',
  '@nestjs/schedule',
  '@nestjs/terminus',
  '@nestjs/platform-express',
  'rxjs',
  'prom-client',
  '@opentelemetry/api',
];

export interface Packed {
  readonly dir: string;
  readonly tarball: string;
  /** Paths inside the tarball, without its `package/` prefix. */
  readonly files: readonly string[];
}

/**
 * `npm pack` of the repo as it is built. `--ignore-scripts`: `prepare` would clean and rebuild
 * dist/ under the feet of the other test files running in parallel; `npm test` built it already,
 * and tools/check-install.sh covers `prepare` in a real install.
 */
export async function packRepo(): Promise<Packed> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-pack-'));
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: REPO_ROOT });
  const [info] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
  return { dir, tarball: path.join(dir, info.filename), files: info.files.map((file) => file.path).sort() };
}

/** Creates the consumer project with the tarball installed; returns its directory. */
export async function createConsumer(packed: Packed): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-consumer-'));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true }, null, 2));
  const installed = path.join(dir, 'node_modules', 'gemstone-utils');
  fs.mkdirSync(installed, { recursive: true });
  await run('tar', ['-xzf', packed.tarball, '-C', installed, '--strip-components=1']);
  const line03 = process.env.GEMSTONE_TYPEORM_LINE === '0.3';
  // Linked from two installs, they find each other (TypeORM its SQLite driver) through the
  // NODE_PATH the test run sets (test/support/packages.js), as siblings in a user's node_modules do.
  for (const name of LINKED_PACKAGES) {
    const source = packageDir(name === 'typeorm' && line03 ? 'typeorm03' : name);
    const link = path.join(dir, 'node_modules', name);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(source, link, 'dir');
  }
  return dir;
}

export interface TypeCheckSetting {
  readonly name: string;
  readonly module: string;
  readonly moduleResolution: string;
  readonly packageType: 'commonjs' | 'module';
}

/** Writes `<consumer>/<setting.name>/` with a package.json, a strict tsconfig.json and the typed consumer file. */
export function writeTypeCheckProject(consumer: string, setting: TypeCheckSetting, source: string): string {
  const dir = path.join(consumer, setting.name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `consumer-${setting.name}`, private: true, type: setting.packageType }));
  const compilerOptions = {
    target: 'es2022',
    module: setting.module,
    moduleResolution: setting.moduleResolution,
    strict: true,
    exactOptionalPropertyTypes: true,
    skipLibCheck: false,
    types: ['node'],
    noEmit: true,
  };
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['typed.ts'] }, null, 2));
  fs.copyFileSync(source, path.join(dir, 'typed.ts'));
  return dir;
}

/** A snippet of the documentation as a file of a consumer project. */
export interface DocSnippet {
  /** Where it comes from, e.g. `docs/api.md:74` (the block's first line). */
  readonly origin: string;
  /** File name inside the project. */
  readonly file: string;
  readonly code: string;
}

/**
 * Writes `<consumer>/<name>/` as a project of its own: a package.json of `packageType`, the typed
 * consumer file and the documentation snippets (each made a module with `export {}`, appended so
 * its lines keep their numbers). `tsconfig` is written as given; without it the project gets none
 * (the caller runs `tsc --init`).
 */
export function writeSnippetProject(
  consumer: string,
  name: string,
  packageType: 'commonjs' | 'module',
  typed: string,
  snippets: readonly DocSnippet[],
  tsconfig?: object,
): string {
  const dir = path.join(consumer, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `consumer-${name}`, private: true, type: packageType }));
  if (tsconfig) fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  fs.copyFileSync(typed, path.join(dir, 'typed.ts'));
  for (const snippet of snippets) fs.writeFileSync(path.join(dir, snippet.file), `${snippet.code}\nexport {};\n`);
  return dir;
}

export interface ProcessResult {
  readonly code: number;
  /** stdout, then stderr. */
  readonly output: string;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** Runs a program to its end; never rejects on a non-zero exit. */
export async function runProgram(file: string, args: readonly string[], cwd: string, timeoutMs = 200_000): Promise<ProcessResult> {
  const started = Date.now();
  try {
    const { stdout, stderr } = await run(file, [...args], { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, output: stdout + stderr, stdout, stderr, ms: Date.now() - started };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string; message: string };
    const stdout = failed.stdout ?? '';
    const stderr = failed.stderr ?? failed.message;
    return { code: typeof failed.code === 'number' ? failed.code : -1, output: `${stdout}${stderr}`, stdout, stderr, ms: Date.now() - started };
  }
}

/** Runs `work` over `items` with at most `limit` at once (the machine has few cores). */
export async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  });
  await Promise.all(lanes);
  return results;
}
