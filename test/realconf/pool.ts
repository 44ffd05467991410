import type { DataSource, QueryRunner } from 'typeorm';

/**
 * Runs `statement` on every connection of a pool of `size` connections: holds `size` runners at
 * once (so each is a different connection), runs it on each, releases them. With the pool's
 * maximum equal to `size`, every later query of the DataSource runs on one of these connections.
 */
export async function onEveryConnection(ds: DataSource, size: number, statement: string): Promise<void> {
  const runners: QueryRunner[] = [];
  try {
    for (let i = 0; i < size; i++) {
      const runner = ds.createQueryRunner();
      runners.push(runner);
      await runner.connect();
      await runner.query(statement);
    }
  } finally {
    for (const runner of runners) await runner.release();
  }
}
