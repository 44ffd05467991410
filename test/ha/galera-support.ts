/**
 * Shared by the Galera tests: typed access to tools/galera.js, one DataSource per node, and the
 * history check that reads the cluster's total order back from a node's binary log.
 *
 * Why the binary log: on Galera, "committed before the takeover" means "earlier in the cluster's
 * total order", and no client can see that order for its own commit (a replayed transaction's
 * `WSREP_LAST_WRITTEN_GTID()` still names an earlier one). Every node logs every transaction in
 * that order (`log_slave_updates`), each statement preceded by its text (`Annotate_rows`, values
 * included: mysql2 sends them inline), so one node's log is the history of the whole cluster.
 */
import * as path from 'path';
import { DataSource } from 'typeorm';
import { GemstoneDB, initDb } from 'gemstone-utils';

const ROOT = path.join(__dirname, '..', '..');

export interface GaleraNode {
  index: number;
  url: string;
  port: number;
  dir: string;
}
export interface GaleraCluster {
  nodes: GaleraNode[];
  clusterName: string;
  stop(): void;
}

// eslint-disable-next-line @typescript-eslint/no-var-requires
export const galera = require(path.join(ROOT, 'tools', 'galera.js')) as {
  startGalera(options?: { nodes?: number; binlog?: boolean }): Promise<GaleraCluster>;
};

/** GEMSTONE_HA_FULL=1: the long runs (docs/production-databases.md). */
export const FULL = process.env.GEMSTONE_HA_FULL === '1';

/** Prints a measurement so a run's output carries the numbers (jest shows console.log). */
export function report(title: string, values: Record<string, unknown>): void {
  // eslint-disable-next-line no-console
  console.log(`${title}\n${JSON.stringify(values, null, 2)}`);
}

/** A DataSource with the election entities on one node (`initDb` done). */
export async function nodeDataSource(node: GaleraNode, connectionLimit = 10): Promise<DataSource> {
  const dataSource = new DataSource({
    type: 'mysql',
    url: node.url,
    timezone: 'Z',
    entities: GemstoneDB.entities,
    extra: { connectionLimit },
  } as ConstructorParameters<typeof DataSource>[0]);
  await initDb(dataSource);
  return dataSource;
}

/** The fenced write of the tests: its text names the namespace, term and writer (see `checkHistory`). */
export const LEDGER_DDL = 'CREATE TABLE IF NOT EXISTS ha_ledger (id bigint AUTO_INCREMENT PRIMARY KEY, ns varchar(64) NOT NULL, term bigint NOT NULL, writer varchar(36) NOT NULL) ENGINE=InnoDB';
export const LEDGER_INSERT = 'INSERT INTO ha_ledger (ns, term, writer) VALUES (?, ?, ?)';

export interface StaleWrite {
  gtid: string;
  ns: string;
  term: number;
  writer: string;
  /** The leader row in the total order when the write committed. */
  leader: { leaderId: string | null; term: number } | undefined;
}

export interface History {
  /** Transactions in the log. */
  transactions: number;
  /** Ledger writes found. */
  writes: number;
  /** Per namespace, the terms granted in commit order (a term appears once, when first granted). */
  grants: Map<string, Array<{ term: number; leaderId: string }>>;
  /** Ledger writes that committed when their writer no longer held their term. */
  stale: StaleWrite[];
}

const GRANT = /^UPDATE\s+`?\w*gemstone_election_leader`?\s+SET leader_id = '([0-9a-f-]{36})', term = (\d+),[\s\S]*WHERE ns = '([^']*)'\s*$/;
const VACATE = /^UPDATE\s+`?\w*gemstone_election_leader`?\s+SET leader_id = NULL,[\s\S]*WHERE ns = '([^']*)'/;
const WRITE = /^INSERT INTO ha_ledger \(ns, term, writer\) VALUES \('([^']*)', (\d+), '([0-9a-f-]{36})'\)/;

/**
 * Reads one node's binary log and replays it: the leader row of each namespace after every
 * transaction (grants, renewals and vacancies by the statements the library sends), and each
 * ledger write against it. A write is stale unless, at its place in the total order, the leader
 * row names its writer, not vacated, under its term.
 */
export async function checkHistory(observer: DataSource): Promise<History> {
  const logs = (await observer.query('SHOW BINARY LOGS')) as Array<{ Log_name: string }>;
  const state = new Map<string, { leaderId: string | null; term: number }>();
  const history: History = { transactions: 0, writes: 0, grants: new Map(), stale: [] };
  let gtid = '';
  for (const { Log_name: log } of logs) {
    // The log name comes from the server, not from a value of the test.
    const events = (await observer.query(`SHOW BINLOG EVENTS IN '${log.replace(/'/g, '')}'`)) as Array<{ Event_type: string; Info: string }>;
    for (const event of events) {
      if (event.Event_type === 'Gtid') {
        gtid = event.Info;
        history.transactions++;
        continue;
      }
      if (event.Event_type !== 'Annotate_rows') continue;
      const text = event.Info.trim();
      let match = GRANT.exec(text);
      if (match) {
        const [, leaderId, term, ns] = match;
        const before = state.get(ns);
        if (!before || before.term !== Number(term)) {
          const list = history.grants.get(ns) ?? [];
          list.push({ term: Number(term), leaderId });
          history.grants.set(ns, list);
        }
        state.set(ns, { leaderId, term: Number(term) });
        continue;
      }
      match = VACATE.exec(text);
      if (match) {
        const row = state.get(match[1]);
        if (row) row.leaderId = null;
        continue;
      }
      match = WRITE.exec(text);
      if (match) {
        history.writes++;
        const [, ns, term, writer] = match;
        const row = state.get(ns);
        if (!row || row.term !== Number(term) || row.leaderId !== writer) {
          history.stale.push({ gtid, ns, term: Number(term), writer, leader: row && { ...row } });
        }
      }
    }
  }
  return history;
}

/** A global status counter of one node (e.g. `wsrep_local_replays`). */
export async function statusOf(dataSource: DataSource, variable: string): Promise<number> {
  const rows = (await dataSource.query('SHOW GLOBAL STATUS LIKE ?', [variable])) as Array<{ Value: string }>;
  return Number(rows[0]?.Value ?? NaN);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
