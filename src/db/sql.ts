/**
 * SQL text is built only with the {@link sql} tagged template: every interpolated value becomes a
 * bound parameter; SQL text can only be spliced in through {@link raw} (identifiers and dialect
 * expressions the library owns, never input). `test/security/` checks that every query
 * this package sends is built here.
 */
import { createHash } from 'crypto';

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

/**
 * A value left open in a statement that is rendered once and bound per call ({@link prepare},
 * {@link bind}): it renders as a placeholder like any value, and `bind` fills it from its key.
 */
export class Slot {
  constructor(readonly key: string) {}
}

/**
 * A value bound as a parameter: given now, or left open as a {@link Slot} and bound per call. The
 * statement builders that serve both a one-off statement and one rendered once take these.
 */
export type Bound<T> = T | Slot;

/** A {@link Slot} for the per-call value `key`. */
export function slot(key: string): Slot {
  return new Slot(key);
}

/** A statement rendered once: its text, a name derived from the text, and its values (some of them {@link Slot}s). */
export interface PreparedSql {
  /** `<prefix>_<16 hex digits of the text's SHA-1>`: the same text always has the same name. */
  readonly name: string;
  readonly text: string;
  readonly slots: readonly unknown[];
}

/** A bound {@link PreparedSql}: what one call sends. */
export interface BoundSql extends Sql {
  readonly name: string;
}

/**
 * `$1, $2, …` for PostgreSQL; `?` for MySQL/MariaDB and SQLite; or a function that writes the
 * reference to the value at a (1-based) position, for values bound elsewhere than in the statement.
 */
export type PlaceholderStyle = 'dollar' | 'question' | ((position: number) => string);

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
        text += style === 'dollar' ? `$${values.length}` : style === 'question' ? '?' : style(values.length);
      }
      text += f.strings[i + 1] ?? '';
    });
    return text;
  };
  const text = walk(fragment);
  return Object.freeze({ text, values: Object.freeze(values) });
}

/**
 * Renders a fragment whose per-call values are {@link Slot}s, once; {@link bind} then makes each
 * call's statement without walking the fragment again. The name (for a named prepared statement)
 * is derived from the text, so two texts never share one.
 */
export function prepare(fragment: SqlFragment, style: PlaceholderStyle, prefix: string): PreparedSql {
  const { text, values } = render(fragment, style);
  const name = `${prefix}_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
  return Object.freeze({ name, text, slots: values });
}

/** The statement of one call: the prepared text, its slots filled from `args` by key. */
export function bind(prepared: PreparedSql, args: Readonly<Record<string, unknown>>): BoundSql & { values: unknown[] } {
  const { slots } = prepared;
  const values = new Array<unknown>(slots.length);
  for (let i = 0; i < slots.length; i++) {
    const value = slots[i];
    values[i] = value instanceof Slot ? args[value.key] : value;
  }
  return { name: prepared.name, text: prepared.text, values };
}
