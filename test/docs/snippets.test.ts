/**
 * Every ```ts block of README.md and docs/*.md compiles as a user's code would: each block is its
 * own module under .tmp/snippets/, `gemstone-utils` (and its `/db`, `/election`, `/metrics`, `/nestjs`, `/dashboard` subpaths) resolves
 * to the built declarations in dist/ (`npm run build` first), and the compiler options are those
 * of a strict CommonJS project (`strict`, `exactOptionalPropertyTypes`). One program for all
 * blocks keeps it fast; a failure names the document and the line inside the block. With
 * GEMSTONE_TYPEORM_LINE=0.3 the blocks compile against TypeORM 0.3 instead of 1.x.
 *
 * A block that is not meant to compile on its own must not be ```ts: use ```text, or give it the
 * declarations it needs (`declare const dataSource: DataSource;`).
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';
import { blockFileName, documentsWithSnippets, documentTsBlocks, extractTsBlocks } from '../support/markdown';
import { packageDir, ROOT_MODULES, TEST_MODULES } from '../support/packages';

const ROOT = path.resolve(__dirname, '..', '..');
const OUT = path.join(ROOT, '.tmp', 'snippets');

interface Snippet {
  /** Document path relative to the repository, e.g. `docs/api.md`. */
  readonly doc: string;
  /** 1-based line of the block's first code line in the document. */
  readonly firstLine: number;
  readonly code: string;
  readonly file: string;
}

function collect(): Snippet[] {
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(OUT, { recursive: true });
  const snippets: Snippet[] = [];
  for (const doc of documentsWithSnippets(ROOT)) {
    const blocks = documentTsBlocks(ROOT, doc);
    for (const block of blocks) {
      const file = path.join(OUT, blockFileName(doc, block));
      // `export {}` after the block makes every file a module of its own (blocks without imports
      // would otherwise share one global scope); appended, so the block's lines keep their numbers.
      fs.writeFileSync(file, `${block.code}\nexport {};\n`);
      snippets.push({ doc, firstLine: block.firstLine, code: block.code, file });
    }
  }
  return snippets;
}

/** What a user's strict CommonJS project would set, with the package resolved to the built types. */
function compilerOptions(): ts.CompilerOptions {
  const dist = (p: string) => [path.join(ROOT, 'dist', 'src', p)];
  return {
    strict: true,
    exactOptionalPropertyTypes: true,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts'],
    noEmit: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    esModuleInterop: true,
    skipLibCheck: true,
    types: ['node'],
    typeRoots: [path.join(ROOT_MODULES, '@types')],
    baseUrl: ROOT,
    paths: {
      // The packages the snippets import: the root's install, then test/deps/'s (Fastify, @nestjs/schedule, …).
      '*': [path.join(ROOT_MODULES, '*'), path.join(TEST_MODULES, '*')],
      'gemstone-utils': dist('index.d.ts'),
      'gemstone-utils/db': dist('db/index.d.ts'),
      'gemstone-utils/election': dist('election/index.d.ts'),
      'gemstone-utils/metrics': dist('metrics/index.d.ts'),
      'gemstone-utils/nestjs': dist('nestjs/index.d.ts'),
      'gemstone-utils/dashboard': dist('dashboard/index.d.ts'),
      // GEMSTONE_TYPEORM_LINE=0.3: the snippets and the package's declarations see TypeORM 0.3.
      ...(process.env['GEMSTONE_TYPEORM_LINE'] === '0.3'
        ? { typeorm: [packageDir('typeorm03')], 'typeorm/*': [path.join(packageDir('typeorm03'), '*')] }
        : {}),
    },
  };
}

function format(diagnostic: ts.Diagnostic, snippet: Snippet | undefined): string {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
  if (!diagnostic.file || diagnostic.start === undefined) return `TS${diagnostic.code}: ${message}`;
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  const where = snippet
    ? `${snippet.doc}:${snippet.firstLine + line}:${character + 1}`
    : `${path.relative(ROOT, diagnostic.file.fileName)}:${line + 1}:${character + 1}`;
  return `${where} TS${diagnostic.code}: ${message}`;
}

describe('documentation snippets', () => {
  const built = path.join(ROOT, 'dist', 'src', 'index.d.ts');
  let snippets: Snippet[] = [];
  let program: ts.Program;

  beforeAll(() => {
    if (!fs.existsSync(built)) throw new Error(`${built} is missing: run \`npm run build\` first`);
    snippets = collect();
    program = ts.createProgram(snippets.map((s) => s.file), compilerOptions());
  });

  test('the README and docs/ have ts blocks to compile', () => {
    expect(snippets.filter((s) => s.doc === 'README.md').length).toBeGreaterThanOrEqual(3);
    expect(snippets.filter((s) => s.doc.startsWith('docs/')).length).toBeGreaterThanOrEqual(3);
  });

  test('every ts block compiles under strict CommonJS settings against the built package', () => {
    const byFile = new Map(snippets.map((s) => [path.normalize(s.file), s]));
    const problems = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()].map((d) => format(d, undefined));
    for (const snippet of snippets) {
      const source = program.getSourceFile(snippet.file);
      if (!source) {
        problems.push(`${snippet.doc}:${snippet.firstLine}: not part of the program`);
        continue;
      }
      const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
      problems.push(...diagnostics.map((d) => format(d, byFile.get(path.normalize(d.file?.fileName ?? snippet.file)) ?? snippet)));
    }
    expect(problems).toEqual([]);
  });

  test('the block extractor finds ts blocks and only those, with their document lines', () => {
    const markdown = ['# t', '```ts', 'const a = 1;', '```', '```sh', 'npm test', '```', '', '```typescript', 'let b;', '```'].join('\n');
    expect(extractTsBlocks(markdown)).toEqual([
      { firstLine: 3, code: 'const a = 1;' },
      { firstLine: 10, code: 'let b;' },
    ]);
    expect(() => extractTsBlocks('```ts\nconst a = 1;\n')).toThrow(/unclosed/);
  });
});
