/**
 * SQL text is built only with the {@link sql} tagged template: every interpolated value becomes a
 * bound parameter; SQL text can only be spliced in through {@link raw} (identifiers and dialect
 * expressions the library owns, never input). `test/security/` checks that every query
 * this package sends is built here.
 */

/** A statement ready for `EntityManager.query`: driver-specific placeholders and their values. */
export interface Sql {
  readonly text: string;
  readonly values: readonly unknown[];
}

/** Library-owned SQL text (an escaped identifier, a dialect expression), spliced in verbatim. */
export class RawSql {
  constructor(readonly text: string) {}
}

/** Marks library-owned SQL text. Never pass input here: that is what parameters are for. */
export function raw(text: string): RawSql {
  return new RawSql(text);
}

/** An unrendered statement or part of one; fragments nest, and render to one parameter list. */
export class SqlFragment {
  constructor(
    readonly strings: readonly string[],
    readonly parts: readonly unknown[],
  ) {}
}

/** Tagged template: `sql\`SELECT … WHERE ns = ${ns}\`` binds `ns` as a parameter. */
export function sql(strings: TemplateStringsArray, ...parts: unknown[]): SqlFragment {
  return new SqlFragment([...strings], parts);
}

/** `$1, $2, …` for PostgreSQL; `?` for MySQL/MariaDB and SQLite. */
export type PlaceholderStyle = 'dollar' | 'question';

/** Renders a fragment (and the fragments inside it) into text with placeholders, plus values. */
export function render(fragment: SqlFragment, style: PlaceholderStyle): Sql {
  const values: unknown[] = [];
  const walk = (f: SqlFragment): string => {
    let text = f.strings[0] ?? '';
    f.parts.forEach((part, i) => {
      if (part instanceof RawSql) text += part.text;
      else if (part instanceof SqlFragment) text += walk(part);
      else {
        values.push(part);
        text += style === 'dollar' ? `$${values.length}` : '?';
      }
      text += f.strings[i + 1] ?? '';
    });
    return text;
  };
  const text = walk(fragment);
  return Object.freeze({ text, values: Object.freeze(values) });
}
