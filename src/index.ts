/**
 * gemstone-utils — leader election for Node.js services on TypeORM, backed by the SQL database
 * they already run. Importing this module registers the election tables on `GemstoneDB`.
 * @packageDocumentation
 */
import 'reflect-metadata';
export * from './db';
export * from './election';
