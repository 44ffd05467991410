/**
 * The two installs (test/support/packages.js): the root's is what building the package needs —
 * a git install runs `prepare`, which installs it — so it compiles nothing and warns of no engine
 * on the Node 20 the package supports; test/deps/'s holds the rest. A package the library shares with
 * its user is one copy in a process, in the test workers and in the processes they start.
 */
import { readFileSync } from 'fs';
import * as path from 'path';
import { startNode, REPO_ROOT } from '../support/children/spawn';
import { TYPEORM_LINE } from '../support/databases';
import { ROOT_MODULES, SHARED, TEST_MODULES } from '../support/packages';

const semver = require('semver') as { intersects(a: string, b: string): boolean };

interface LockEntry {
  readonly version?: string;
  readonly dev?: boolean;
  readonly hasInstallScript?: boolean;
  readonly engines?: { readonly node?: string } | readonly string[];
}

function lockPackages(dir: string): [string, LockEntry][] {
  const lock = JSON.parse(readFileSync(path.join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  return Object.entries(lock.packages).filter(([key]) => key !== '');
}

describe('the root install (what a git install runs before prepare)', () => {
  const packages = lockPackages(REPO_ROOT);

  test('compiles nothing: no package with an install script (native SQLite drivers live in test/deps/)', () => {
    expect(packages.filter(([, entry]) => entry.hasInstallScript).map(([key]) => key)).toEqual([]);
  });

  test('every package accepts Node 20 (npm warns EBADENGINE otherwise)', () => {
    const refusing = packages
      .map(([key, entry]) => [key, Array.isArray(entry.engines) ? undefined : (entry.engines as { node?: string } | undefined)?.node] as const)
      .filter(([, range]) => range !== undefined && !semver.intersects(range, '>=20.0.0 <21.0.0'));
    expect(refusing).toEqual([]);
  });
});

describe('one copy of each shared package', () => {
  test('SHARED names the peers the root holds', () => {
    expect(SHARED).toEqual(expect.arrayContaining(['typeorm', 'reflect-metadata', 'rxjs', '@nestjs/common', '@nestjs/core', '@opentelemetry/api']));
  });

  test('in a test worker, a shared package resolves to the root, a test package to test/deps/', () => {
    const under = (request: string, folder: string) => require.resolve(request).startsWith(folder + path.sep);
    for (const name of ['reflect-metadata', '@opentelemetry/api', 'rxjs']) expect(under(name, path.join(ROOT_MODULES, name))).toBe(true);
    // GEMSTONE_TYPEORM_LINE=0.3 (the suite's second run): `typeorm` is TypeORM 0.3, test/deps/'s.
    expect(under('typeorm', TYPEORM_LINE === '0.3' ? path.join(TEST_MODULES, 'typeorm03') : path.join(ROOT_MODULES, 'typeorm'))).toBe(true);
    expect(under('better-sqlite3', path.join(TEST_MODULES, 'better-sqlite3'))).toBe(true);
  });

  // test/deps/'s packages bring second copies (TypeORM 0.3 its reflect-metadata, @opentelemetry/api for
  // sdk-metrics): a child loading them, the package and a driver holds one copy of each shared
  // package, the root's, on both TypeORM lines.

  // `import` ignores NODE_PATH: test/support/esm-resolve.mjs falls back to test/deps/ (Nest 12's
  // core, an ES module of the root's, imports @nestjs/platform-express, which test/deps/ holds).
  test('an ES module outside test/deps/ imports a package only test/deps/ holds', async () => {
    const child = startNode(['--input-type=module', '-e', "const { ExpressAdapter } = await import('@nestjs/platform-express'); process.stdout.write(typeof ExpressAdapter);"]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: 'function', stderr: '' });
  });

  test.each([['1.x'], ['0.3']])('in a child process the tests start (TypeORM %s)', async (line) => {
    const child = startNode(['test/support/children/package-copies.js'], { GEMSTONE_TYPEORM_LINE: line === '0.3' ? '0.3' : '' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const copies = JSON.parse(stdout) as Record<string, string[]>;
    // Loaded at all, so the check below means something (on the 0.3 line `typeorm` is typeorm03).
    expect(Object.keys(copies)).toEqual(expect.arrayContaining(['reflect-metadata', '@opentelemetry/api', 'typeorm03', ...(line === '1.x' ? ['typeorm'] : [])]));
    const shared = Object.fromEntries(Object.entries(copies).filter(([name]) => SHARED.includes(name)));
    expect(shared).toEqual(Object.fromEntries(Object.keys(shared).map((name) => [name, [path.join(ROOT_MODULES, name)]])));
  });
});
