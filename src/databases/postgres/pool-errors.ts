import type { DataSource } from 'typeorm';

/** What is used of a `pg` Pool (pg-pool) and its clients. */
interface PgPool {
  on(event: 'acquire', listener: (client: PgPoolClient) => void): unknown;
}
interface PgPoolClient {
  on(event: 'error', listener: (error: Error) => void): unknown;
}

const guardedPools = new WeakSet<object>();
const guardedClients = new WeakSet<object>();

/**
 * Keeps a pooled connection's error from crashing the process in the moment after the pool hands
 * it out. pg-pool removes its own `'error'` listener from a client as it hands the client out;
 * TypeORM adds its listener when the promise of the connection settles, a microtask later. A
 * server that ends the session right after the connection reported ready (a Patroni primary
 * demoting itself, `pg_terminate_backend`, a restart) sends both messages in one packet, and
 * `pg` handles the second before any microtask runs: an `'error'` with no listener, which Node
 * throws — the application exits ("Unhandled 'error' event", code 57P01). Seen in the Patroni
 * test, and reproduced by terminating a busy DataSource's sessions every few hundred ms.
 *
 * The listener added here to each client the pool hands out does nothing, on purpose: the error
 * has already made the client unusable (`pg` fails every query on it, so the transaction that
 * took it fails and is retried as any lost connection is), and releasing it drops it from the
 * pool. Only the crash is prevented. Listening to the pool's public `'acquire'` event changes
 * nothing else of TypeORM's or the pool's behaviour.
 */
export function guardPoolErrors(dataSource: DataSource): void {
  const driver = dataSource.driver as unknown as { master?: unknown; slaves?: unknown };
  // Called at every use of the DataSource: its pools are new only when it was initialized again.
  if (guardedPools.has(driver.master as object)) return;
  const pools = [driver.master, ...(Array.isArray(driver.slaves) ? driver.slaves : [])];
  for (const pool of pools) {
    if (!isPool(pool) || guardedPools.has(pool)) continue;
    guardedPools.add(pool);
    pool.on('acquire', (client) => {
      if (guardedClients.has(client)) return;
      guardedClients.add(client);
      client.on('error', ignoreHandedOutClientError);
    });
  }
}

function ignoreHandedOutClientError(): void {
  // See guardPoolErrors: the error reaches whoever uses the client through its failed queries.
}

function isPool(value: unknown): value is PgPool {
  return typeof value === 'object' && value !== null && typeof (value as { on?: unknown }).on === 'function';
}
