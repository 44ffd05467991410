/**
 * One folder per database, each holding everything that database does differently. Importing
 * this module registers them (see `registry.ts`); every entry point of the package imports it.
 */
import './postgres';
import './mysql';
import './sqlite';

export { dialectOf } from './registry';
export type { Dialect, DialectName } from './dialect';
