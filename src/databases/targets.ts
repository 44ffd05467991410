import type { DatabaseTarget } from './contract/target';

/**
 * The registered URL targets, in registration order (the database folders register theirs when
 * `src/databases` is imported). The shared code finds a URL's database here by its scheme and a
 * DataSourceOptions' database by its `type`, and never imports a database folder.
 */
const targets: DatabaseTarget[] = [];

/** Registers the URL target of one database. */
export function registerTarget(target: DatabaseTarget): void {
  targets.push(target);
}

/** Every registered target, in registration order. */
export function allTargets(): readonly DatabaseTarget[] {
  return targets;
}

/** The target answering to a URL scheme (lower case, without the colon), if any. */
export function targetOfScheme(scheme: string | undefined): DatabaseTarget | undefined {
  return scheme === undefined ? undefined : targets.find((target) => target.schemes.includes(scheme));
}

/** The target of a TypeORM `type`, if any. */
export function targetOfType(type: unknown): DatabaseTarget | undefined {
  const name = String(type);
  return targets.find((target) => target.types.includes(name));
}
