/**
 * A lint rule, run as a test: SQL text that reaches the database is never built from values.
 *
 * The sinks are `.query(text, …)` (EntityManager, DataSource, QueryRunner, pg Client), mysql2's
 * `.execute(text, values)` (server-side parameters) and the query builder's condition methods. Their text must be one of:
 * - a string literal (no interpolation at all);
 * - for `.query`: a variable destructured from `render(…)` — the `sql` tagged template of
 *   `src/db/sql.ts`, which binds every interpolated value as a parameter — or from `bind(…)`
 *   (a statement `prepare` rendered once the same way, its values filled per call); also as the
 *   `text` of a pg query config object (`{ name, text, values }`, a named prepared statement);
 * - for `.query`: a template literal whose only interpolations are module-level string constants
 *   that are plain SQL identifiers (e.g. `LISTEN ${NOTIFY_CHANNEL}`: LISTEN takes no parameters);
 * - for `.query`: `q.query` with `q.parameters` of the same object — a `Query` that TypeORM's schema
 *   builder generated from entity metadata (plugin tables), replayed unchanged.
 * Query-builder conditions (`where`, `andWhere`, …) must be string literals that bind values with
 * `:name` parameters (or `new Brackets(…)`, an arrow or an object of column values). And `SqlFragment`s are made only by the `sql` tag (no `new SqlFragment`
 * outside sql.ts), so the parameter binding cannot be bypassed.
 */
import * as fs from 'fs';
import * as path from 'path';
import ts from 'typescript';

export interface Violation {
  file: string;
  line: number;
  rule: string;
  code: string;
}

const CONDITION_METHODS = new Set(['where', 'andWhere', 'orWhere', 'having', 'andHaving', 'orHaving']);
const SQL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Every `*.ts` file under `dir`, recursively. */
export function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

function parse(file: string, text: string): ts.SourceFile {
  return ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
}

/** Module-level `const NAME = 'literal'` across the sources: the only text a `.query` template may splice. */
export function stringConstants(sources: ReadonlyMap<string, string>): Map<string, string> {
  const constants = new Map<string, string>();
  for (const [file, text] of sources) {
    for (const statement of parse(file, text).statements) {
      if (!ts.isVariableStatement(statement) || !(statement.declarationList.flags & ts.NodeFlags.Const)) continue;
      for (const d of statement.declarationList.declarations) {
        if (ts.isIdentifier(d.name) && d.initializer && ts.isStringLiteral(d.initializer)) constants.set(d.name.text, d.initializer.text);
      }
    }
  }
  return constants;
}

/** The calls whose result is rendered SQL text (see `src/db/sql.ts`). */
const RENDERERS = new Set(['render', 'bind']);

/** Whether every declaration of `name` in the file takes its value from `render(…)` or `bind(…)`. */
function boundToRender(source: ts.SourceFile, name: string): boolean {
  let found = 0;
  let fromRender = 0;
  const visit = (node: ts.Node) => {
    if (ts.isVariableDeclaration(node)) {
      const names = ts.isIdentifier(node.name)
        ? [node.name.text]
        : ts.isObjectBindingPattern(node.name)
          ? node.name.elements.map((e) => (ts.isIdentifier(e.name) ? e.name.text : ''))
          : [];
      if (names.includes(name)) {
        found++;
        const init = node.initializer;
        if (init && ts.isCallExpression(init) && ts.isIdentifier(init.expression) && RENDERERS.has(init.expression.text)) fromRender++;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found > 0 && found === fromRender;
}

/**
 * `{ name, text, values }` (a pg query config) or `{ sql, timeout }` (mysql2's query options)
 * whose `text` / `sql` is a variable bound to `render`/`bind`.
 */
function isRenderedConfig(source: ts.SourceFile, node: ts.Expression): boolean {
  if (!ts.isObjectLiteralExpression(node)) return false;
  const text = node.properties.find((p) => p.name !== undefined && ts.isIdentifier(p.name) && (p.name.text === 'text' || p.name.text === 'sql'));
  if (!text) return false;
  const value = ts.isShorthandPropertyAssignment(text) ? text.name : ts.isPropertyAssignment(text) ? text.initializer : undefined;
  return value !== undefined && ts.isIdentifier(value) && boundToRender(source, value.text);
}

function isPlainString(node: ts.Expression): boolean {
  return ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node);
}

/**
 * `runner.query(q.query, q.parameters)`: a `Query` of TypeORM's own schema builder
 * (`createSchemaBuilder().log().upQueries`), DDL TypeORM generated from entity metadata with its
 * own parameter list — replayed as it is, with nothing of ours spliced in.
 */
function isSchemaBuilderQuery(call: ts.CallExpression): boolean {
  const [text, parameters] = call.arguments;
  return (
    text !== undefined &&
    parameters !== undefined &&
    ts.isPropertyAccessExpression(text) &&
    text.name.text === 'query' &&
    ts.isIdentifier(text.expression) &&
    ts.isPropertyAccessExpression(parameters) &&
    parameters.name.text === 'parameters' &&
    ts.isIdentifier(parameters.expression) &&
    parameters.expression.text === text.expression.text
  );
}

/** The rule over one file's text (`file` is only used in reports and for the sql.ts exemption). */
export function checkSqlSource(file: string, text: string, constants: ReadonlyMap<string, string>): Violation[] {
  return scanSqlSource(file, text, constants).violations;
}

/** The rule's findings, plus how many sinks it looked at (a rule that sees nothing proves nothing). */
export function scanSqlSource(file: string, text: string, constants: ReadonlyMap<string, string>): { violations: Violation[]; sinks: number } {
  const source = parse(file, text);
  const violations: Violation[] = [];
  let sinks = 0;
  const report = (node: ts.Node, rule: string) =>
    violations.push({
      file,
      line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1,
      rule,
      code: node.getText(source).slice(0, 160),
    });

  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const method = node.expression.name.text;
      const first = node.arguments[0];
      const statementSink = method === 'query' || method === 'execute';
      if ((statementSink || CONDITION_METHODS.has(method)) && first) sinks++;
      if (statementSink && first) {
        const ok =
          isPlainString(first) ||
          (ts.isIdentifier(first) && boundToRender(source, first.text)) ||
          isRenderedConfig(source, first) ||
          isSchemaBuilderQuery(node) ||
          (ts.isTemplateExpression(first) &&
            first.templateSpans.every((span) => {
              const value = ts.isIdentifier(span.expression) ? constants.get(span.expression.text) : undefined;
              return value !== undefined && SQL_IDENTIFIER.test(value);
            }));
        if (!ok) report(node, `.${method}() text must be a literal, render() output, or a template of identifier constants`);
      }
      if (CONDITION_METHODS.has(method) && first && !isPlainString(first) && !ts.isArrowFunction(first) && !ts.isNewExpression(first) && !ts.isObjectLiteralExpression(first)) {
        report(node, `.${method}() condition must be a string literal with :name parameters`);
      }
    }
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'SqlFragment' && !file.endsWith(path.join('db', 'sql.ts'))) {
      report(node, 'SqlFragment is built only by the sql tagged template');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { violations, sinks };
}

/** The rule over a source tree. */
export function checkSqlTree(dir: string): { violations: Violation[]; sinks: number } {
  const sources = new Map(sourceFiles(dir).map((file) => [file, fs.readFileSync(file, 'utf8')] as const));
  const constants = stringConstants(sources);
  const results = [...sources].map(([file, text]) => scanSqlSource(path.relative(process.cwd(), file), text, constants));
  return { violations: results.flatMap((r) => r.violations), sinks: results.reduce((n, r) => n + r.sinks, 0) };
}
