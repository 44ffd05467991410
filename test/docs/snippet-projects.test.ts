/**
 * Every ts block of README.md and docs/*.md, and every examples/*.ts, compiles where users compile it, with TypeScript 7
 * (`typescript@7`, installed apart: `npm ci --prefix test/typescript7`):
 * - `npm init -y` (npm 11 writes `"type": "commonjs"`) + `tsc --init`, with the two changes the
 *   README asks for: `verbatimModuleSyntax` off (with it on, a CommonJS package allows no
 *   `import` statement: TS1295) and the decorator options (TS1240 on TypeORM entities otherwise);
 * - the same package as an ES module (`"type": "module"`): only the decorator options added;
 * - a classic strict CommonJS tsconfig.
 * `gemstone-utils` resolves through its package.json `exports` to the built declarations (run
 * `npm run build` first). One compiler run per project over all blocks keeps it cheap; the blocks
 * the existing strict CommonJS program checks (snippets.test.ts) are the same files.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { promisify } from 'util';
import { blockFileName, documentsWithSnippets, documentTsBlocks } from '../support/markdown';
import { installedPackages } from '../support/packages';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');
const OUT = path.join(ROOT, '.tmp', 'snippet-projects');
const EXAMPLES = path.join(ROOT, 'examples');
const TSC7 = path.join(ROOT, 'test', 'typescript7', 'node_modules', 'typescript', 'bin', 'tsc');
const HAS_TSC7 = fs.existsSync(TSC7);
/** Under CI a missing TypeScript 7 is a failure, elsewhere a skip (it is installed apart). */
const RUN = HAS_TSC7 || process.env['CI'] === 'true';

/** What the README says TypeORM entities (decorators) need, on the command line of `tsc -p`. */
const DECORATORS = ['--experimentalDecorators', '--emitDecoratorMetadata'];

interface Project {
  readonly name: string;
  readonly packageType: 'commonjs' | 'module';
  /** Written as given; absent: the tsconfig.json `tsc --init` writes. */
  readonly tsconfig?: object;
  /** Options given to `tsc -p` (they override the tsconfig's, as the README's edits would). */
  readonly args: readonly string[];
}

const PROJECTS: readonly Project[] = [
  { name: 'init-commonjs', packageType: 'commonjs', args: [...DECORATORS, '--verbatimModuleSyntax', 'false'] },
  { name: 'init-esm', packageType: 'module', args: DECORATORS },
  {
    name: 'classic-commonjs',
    packageType: 'commonjs',
    tsconfig: {
      compilerOptions: {
        target: 'es2022',
        module: 'commonjs',
        strict: true,
        exactOptionalPropertyTypes: true,
        esModuleInterop: true,
        skipLibCheck: true,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
      },
    },
    args: [],
  },
];

/** node_modules of a project: the repository's packages (its two installs), and gemstone-utils as the repository itself. */
function linkModules(dir: string): void {
  const modules = path.join(dir, 'node_modules');
  fs.mkdirSync(modules);
  for (const [name, source] of installedPackages()) {
    fs.mkdirSync(path.dirname(path.join(modules, name)), { recursive: true });
    fs.symlinkSync(fs.realpathSync(source), path.join(modules, name));
  }
  fs.symlinkSync(ROOT, path.join(modules, 'gemstone-utils'));
}

function writeProject(project: Project): string {
  const dir = path.join(OUT, project.name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `snippets-${project.name}`, version: '1.0.0', private: true, type: project.packageType }));
  if (project.tsconfig) fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(project.tsconfig, null, 2));
  linkModules(dir);
  // The TypeScript examples (examples/*.ts) are compiled the same way.
  for (const example of fs.readdirSync(EXAMPLES).filter((file) => file.endsWith('.ts'))) {
    fs.copyFileSync(path.join(EXAMPLES, example), path.join(dir, `examples_${example}`));
  }
  for (const doc of documentsWithSnippets(ROOT)) {
    for (const block of documentTsBlocks(ROOT, doc)) {
      // `export {}` makes each block a module of its own; appended, so the line numbers hold.
      fs.writeFileSync(path.join(dir, blockFileName(doc, block)), `${block.code}\nexport {};\n`);
    }
  }
  return dir;
}

async function tsc(args: readonly string[], cwd: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [TSC7, ...args], { cwd, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string; message: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, output: `${failed.stdout ?? ''}${failed.stderr ?? failed.message}` };
  }
}

describe('documentation snippets in the projects users make (TypeScript 7)', () => {
  const results = new Map<string, Promise<{ code: number; output: string }>>();

  beforeAll(() => {
    if (!RUN) return;
    if (!HAS_TSC7) throw new Error(`${TSC7} is missing: run \`npm ci --prefix test/typescript7\``);
    if (!fs.existsSync(path.join(ROOT, 'dist', 'src', 'index.d.ts'))) throw new Error('dist/ is missing: run `npm run build` first');
    fs.rmSync(OUT, { recursive: true, force: true });
    for (const project of PROJECTS) {
      const dir = writeProject(project);
      const compiled = (async () => {
        if (!project.tsconfig) {
          const init = await tsc(['--init'], dir);
          if (init.code !== 0) return init;
        }
        return tsc(['-p', '.', '--noEmit', ...project.args], dir);
      })();
      results.set(project.name, compiled);
    }
  });

  afterAll(() => fs.rmSync(OUT, { recursive: true, force: true }));

  (RUN ? test.each : test.skip.each)(PROJECTS.map((project) => [project.name]))(
    'every ts block compiles in the %s project',
    async (name) => {
      const result = await results.get(name)!;
      expect({ code: result.code, output: result.output }).toEqual({ code: 0, output: '' });
    },
    120_000,
  );
});
