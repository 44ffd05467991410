import type { DataSource } from 'typeorm';

/*
 * How the library recognises what a caller passed (a DataSource, a metrics registry, an elector)
 * without importing the package that made it: by its shape, an object whose named members are
 * functions. Duck typing, not `instanceof`: a second copy of a package (another TypeORM in
 * node_modules) makes objects of the same shape but of another class.
 */

/** Whether `value` is an object (not null) whose members `names` are all functions. */
export function hasMethods(value: unknown, names: readonly string[]): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const members = value as Record<string, unknown>;
  return names.every((name) => typeof members[name] === 'function');
}

/** A TypeORM DataSource, as an option of a service or an elector is checked (it makes query runners). */
export function isDataSource(value: unknown): value is DataSource {
  return hasMethods(value, ['createQueryRunner']);
}
