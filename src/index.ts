/**
 * gemstone-utils — leader election for Node.js services on TypeORM, backed by the SQL database
 * they already run. Importing this module registers the election tables on `GemstoneDB`.
 * @packageDocumentation
 * @module gemstone-utils
 */
// The database folders register their dialects (see src/databases/registry.ts).
import './databases';
import 'reflect-metadata';
export * from './db';
export * from './election';
