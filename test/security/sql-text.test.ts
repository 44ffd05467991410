/**
 * Every SQL text the package sends is built without interpolating values (see sql-rule.ts), and
 * the rule is shown to catch the ways that could go wrong.
 */
import * as path from 'path';
import * as fs from 'fs';
import { checkSqlSource, checkSqlTree, sourceFiles, stringConstants } from './sql-rule';

const SRC = path.join(__dirname, '..', '..', 'src');
const constants = stringConstants(new Map([['consts.ts', "export const CHANNEL = 'gemstone_election';\nexport const EVIL = \"x'; DROP TABLE t; --\";"]]));
const check = (code: string) => checkSqlSource('planted.ts', code, constants);

describe('no SQL text built from values', () => {
  test('src/: every query text is a literal, render() output or a template of identifier constants', () => {
    const { violations } = checkSqlTree(SRC);
    expect(violations.map((v) => `${v.file}:${v.line} ${v.rule}: ${v.code}`)).toEqual([]);
  });

  test('the rule sees the sinks src/ really has, and flags a bad line planted into real code', () => {
    // A rule that matched nothing would pass forever: it must find session.ts's query(text) and
    // databases/mysql/session.ts's execute(…) and query(…), at least.
    expect(checkSqlTree(SRC).sinks).toBeGreaterThanOrEqual(3);
    const srcConstants = stringConstants(new Map(sourceFiles(SRC).map((f) => [f, fs.readFileSync(f, 'utf8')] as const)));
    const mysql = fs.readFileSync(path.join(SRC, 'databases', 'mysql', 'session.ts'), 'utf8');
    expect(checkSqlSource('mysql-session.ts', mysql, srcConstants)).toEqual([]);
    for (const [from, to] of [
      ['connection.execute({ sql: text,', 'connection.execute({ sql: `${text} /* ${parameters[0]} */`,'],
      ['connection.query({ sql: text,', "connection.query({ sql: text + ' WHERE 1',"],
    ]) {
      const planted = mysql.replace(from!, to!);
      expect(planted).not.toBe(mysql);
      expect(checkSqlSource('mysql-session.ts', planted, srcConstants)).toHaveLength(1);
    }
    const withRender = "import { render } from './sql';\nasync function run(m, f) { const { text, values } = render(f, 'dollar'); return m.query(text, [...values]); }";
    expect(check(withRender)).toEqual([]);
    expect(check(withRender.replace('render(f', 'other(f'))).toHaveLength(1);
  });

  test.each([
    ['a template literal interpolating a value', "m.query(`SELECT * FROM t WHERE ns = '${ns}'`)"],
    ['string concatenation', "dataSource.query('DELETE FROM t WHERE id = ' + id)"],
    ['a variable built by concatenation', "const text = 'SELECT ' + column; m.query(text)"],
    ['a variable named like render output but built by hand', "const { text } = { text: `SELECT ${ns}` }; m.query(text)"],
    ['a template of a constant that is not an identifier', 'client.query(`LISTEN ${EVIL}`)'],
    ['a template of a local variable', 'client.query(`LISTEN ${channel}`)'],
    ['a call that returns text', 'runner.query(buildSql(ns), [])'],
    ['a query-builder condition with interpolation', "qb.where(`l.ns = '${ns}'`)"],
    ['a query-builder condition from a variable', 'qb.andWhere(condition, {})'],
    ['a concatenated orWhere', "qb.orWhere('x = ' + x)"],
    ['a hand-made SqlFragment', 'execute(context, m, new SqlFragment([userText], []))'],
    ['a query config whose text is built by hand', "const text = `SELECT ${ns}`; client.query({ name: 'x', text, values: [] })"],
    ['a query config with an inline text', "client.query({ name: 'x', text: 'SELECT ' + ns, values: [] })"],
    ['a mysql2 execute() with an interpolated text', "connection.execute({ sql: `SELECT ${column} FROM t` }, [], done)"],
    ['a mysql2 execute() with a concatenated text', "connection.execute('SELECT * FROM t WHERE ns = ' + ns, [], done)"],
  ])('catches %s', (_label, code) => {
    expect(check(code)).toHaveLength(1);
  });

  test.each([
    ['a literal', "m.query('SELECT VERSION() AS version')"],
    ['LISTEN on an identifier constant', 'client.query(`LISTEN ${CHANNEL}`)'],
    ['a parameterized condition', "qb.where('l.ns = :ns', { ns })"],
    ['Brackets', "qb.where(new Brackets((b) => b.where('a = :a', { a })))"],
    ['a named statement bound from a prepared one', 'async function run(c, p, a) { const { name, text, values } = bind(p, a); return c.query({ name, text, values }); }'],
    ['a mysql2 execute() of render() output', "async function run(c, f, done) { const { text, values } = render(f, 'question'); c.execute({ sql: text, timeout: 5 }, values, done); }"],
  ])('allows %s', (_label, code) => {
    expect(check(code)).toEqual([]);
  });
});
