/**
 * Another connection to a SQLite file that takes and releases the write lock SYNCHRONOUSLY for the
 * caller (e.g. from inside a TypeORM logger call, between two statements of the library).
 *
 * It lives in a worker thread and uses the same driver module as the DataSource under test: two
 * copies of SQLite in one process (better-sqlite3's beside node-sqlite3's) do not see each other's
 * locks, so a lock taken through the other driver would not be a lock at all.
 */
import { once } from 'events';
import { Worker } from 'worker_threads';
import { packageDir } from './packages';

export type SqliteDriverName = 'sqlite3' | 'better-sqlite3';

const WORKER = `
const { parentPort, workerData } = require('worker_threads');
const { file, module, driver, signal } = workerData;
const flag = new Int32Array(signal);
const answer = (ok) => { Atomics.store(flag, 1, ok ? 1 : 2); Atomics.add(flag, 0, 1); Atomics.notify(flag, 0); };
if (driver === 'better-sqlite3') {
  const Database = require(module);
  const db = new Database(file, { timeout: 2000 });
  parentPort.on('message', (text) => {
    if (text === 'close') { db.close(); parentPort.close(); return void answer(true); }
    try { db.exec(text); answer(true); } catch { answer(false); }
  });
} else {
  const sqlite3 = require(module);
  const db = new sqlite3.Database(file);
  db.configure('busyTimeout', 2000);
  parentPort.on('message', (text) => {
    // The worker then ends by itself (terminating it while the driver finishes the close aborts node-sqlite3 5).
    if (text === 'close') return void db.close(() => { parentPort.close(); answer(true); });
    db.exec(text, (error) => answer(!error));
  });
}
`;

export class SyncSqliteLocker {
  private readonly signal = new SharedArrayBuffer(8);
  private readonly flag = new Int32Array(this.signal);
  private readonly worker: Worker;

  constructor(file: string, driver: SqliteDriverName) {
    const module = packageDir(driver === 'better-sqlite3' ? 'better-sqlite3' : process.env.GEMSTONE_SQLITE3 === '5' ? 'sqlite3-v5' : 'sqlite3');
    this.worker = new Worker(WORKER, { eval: true, workerData: { file, module, driver, signal: this.signal } });
    this.worker.unref();
  }

  /** Runs `text` on the locker's connection and blocks this thread until it finished; whether it succeeded. */
  run(text: string, timeoutMs = 5000): boolean {
    const seen = Atomics.load(this.flag, 0);
    this.worker.postMessage(text);
    if (Atomics.wait(this.flag, 0, seen, timeoutMs) === 'timed-out') throw new Error(`the locker did not answer ${JSON.stringify(text)} within ${timeoutMs} ms`);
    return Atomics.load(this.flag, 1) === 1;
  }

  /** Takes the write lock (BEGIN IMMEDIATE, waiting up to 2 s for it); whether it got it. */
  lock(): boolean {
    return this.run('BEGIN IMMEDIATE');
  }

  release(): void {
    if (!this.run('COMMIT')) throw new Error('the locker could not release the write lock');
  }

  async close(): Promise<void> {
    const exited = once(this.worker, 'exit');
    this.run('close');
    await exited;
  }
}
