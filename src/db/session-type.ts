import type { EntityManager, QueryRunner } from 'typeorm';

/**
 * The caller's connection or transaction. Inside an active transaction the library joins it and
 * never commits, rolls back or releases it; otherwise it runs its own transaction on it.
 * (A leaf: the contracts of the database folders name it without importing `session.ts`.)
 */
export type Session = QueryRunner | EntityManager;
