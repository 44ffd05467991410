/** Code blocks of the repository's Markdown documents, for the tests that compile them. */
import * as fs from 'fs';
import * as path from 'path';

export interface TsBlock {
  /** 1-based line of the block's first code line in the document. */
  readonly firstLine: number;
  readonly code: string;
}

/** Fenced blocks opened by a line that is exactly ```ts or ```typescript (other languages are skipped). */
export function extractTsBlocks(markdown: string): TsBlock[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: TsBlock[] = [];
  let fence: string | null = null;
  let isTs = false;
  let start = 0;
  let body: string[] = [];
  lines.forEach((line, i) => {
    if (fence === null) {
      const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(line);
      if (!open) return;
      fence = open[2] as string;
      isTs = open[3] === 'ts' || open[3] === 'typescript';
      start = i + 2;
      body = [];
    } else if (line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, '') === '') {
      if (isTs) blocks.push({ firstLine: start, code: body.join('\n') });
      fence = null;
    } else {
      body.push(line);
    }
  });
  if (fence !== null) throw new Error(`unclosed code fence opened at line ${start - 1}`);
  return blocks;
}

/** README.md and docs/*.md, relative to `root`: the documents whose ts blocks are compiled. */
export function documentsWithSnippets(root: string): string[] {
  const docsDir = path.join(root, 'docs');
  const docs = fs.existsSync(docsDir)
    ? fs.readdirSync(docsDir).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)
    : [];
  return ['README.md', ...docs];
}

/** The ts blocks of one document (a path relative to `root`); the error names the document. */
export function documentTsBlocks(root: string, doc: string): TsBlock[] {
  try {
    return extractTsBlocks(fs.readFileSync(path.join(root, doc), 'utf8'));
  } catch (error) {
    throw new Error(`${doc}: ${(error as Error).message}`);
  }
}

/** A file name for a block: the document's path and the block's line, e.g. `docs_api_md_L74.ts`. */
export function blockFileName(doc: string, block: TsBlock): string {
  return `${doc.replace(/[^\w]+/g, '_')}_L${block.firstLine}.ts`;
}
