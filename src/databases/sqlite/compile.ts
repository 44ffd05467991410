import { render, Slot, SqlFragment } from '../../db/sql';

/** A named input of a {@link compile}d statement (`slot(name)` of `db/sql`): bound as a parameter at each run. */
export { Slot };

/**
 * A statement rendered once: its text, and its parameter values in order — constants, or
 * {@link Slot}s filled from the input at each run. Its prepared statement is kept per connection.
 */
export interface CompiledStatement {
  readonly text: string;
  readonly values: readonly unknown[];
  readonly prepared: WeakMap<object, unknown>;
}

/**
 * Renders `statement` once (built with the `sql` tag, so every value is a parameter; put a
 * {@link Slot} where a value changes from run to run): a hot statement is then neither rebuilt,
 * rendered nor looked up by its text at each run.
 */
export function compile(statement: SqlFragment): CompiledStatement {
  const { text, values } = render(statement, 'question');
  return Object.freeze({ text, values, prepared: new WeakMap<object, unknown>() });
}
