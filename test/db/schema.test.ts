/**
 * The tables as the database describes them: column names and order, types,
 * nullability, primary keys, the (ns, expires_at) index and `term` ≥ 0 with default 0; the
 * candidate's metadata, priority (default 0) and eligibility (default true), the history table,
 * the runs table of schedules.
 */
import type { DataSource } from 'typeorm';
import { describeEachDatabase, query, TestDatabase, uuid } from '../support/databases';
import { ns } from '../support/rows';
import { ELECTION_INDEX } from './support/schema';

interface ColumnShape {
  name: string;
  /** `string(n)`, `uuid` (a 36-character string or a native uuid), `instant(ms)`, `bigint`, `integer`, `boolean` or `text`. */
  type: string;
  nullable: boolean;
  default?: string | null;
}

/** A database type in the documented schema's terms (docs/databases.md); instants must keep at least milliseconds. */
function shape(db: TestDatabase, raw: { type: string; length?: number | null; precision?: number | null }): string {
  const type = raw.type.toLowerCase();
  const length = raw.length ?? Number(/\((\d+)\)/.exec(type)?.[1] ?? NaN);
  if (/^(character varying|varchar|char|character)/.test(type)) return length === 36 ? 'uuid' : `string(${length})`;
  if (type === 'uuid') return 'uuid';
  if (/^bigint/.test(type)) return 'bigint';
  if (type === 'text') return 'text';
  if (/^(integer|int\(11\)|int)$/.test(type)) return 'integer';
  if (/^(boolean|tinyint\(1\))$/.test(type)) return 'boolean';
  if (db.kind === 'postgres' && type === 'timestamp with time zone') return (raw.precision ?? 0) >= 3 ? 'instant(ms)' : type;
  if (db.kind === 'mariadb' && /^(datetime|timestamp)\((\d)\)$/.test(type)) return Number(/\((\d)\)/.exec(type)![1]) >= 3 ? 'instant(ms)' : type;
  if (db.kind === 'sqlite' && type === 'datetime') return 'instant(ms)'; // UTC text with milliseconds
  return type;
}

function normalizeDefault(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return String(value).replace(/^\(?'?|'?\)?(::bigint)?$/g, '');
}

async function describeTable(db: TestDatabase, ds: DataSource, table: string): Promise<{ columns: ColumnShape[]; primaryKey: string[] }> {
  switch (db.kind) {
    case 'postgres': {
      const rows = await query<Record<string, unknown>>(
        ds,
        `SELECT column_name, data_type, character_maximum_length, datetime_precision, is_nullable, column_default
           FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`,
        [table],
      );
      const pk = await query<{ column_name: string }>(
        ds,
        `SELECT k.column_name FROM information_schema.table_constraints c
           JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name AND k.table_schema = c.table_schema
          WHERE c.table_schema = current_schema() AND c.table_name = ? AND c.constraint_type = 'PRIMARY KEY' ORDER BY k.ordinal_position`,
        [table],
      );
      return {
        columns: rows.map((r) => ({
          name: String(r.column_name),
          type: shape(db, { type: String(r.data_type), length: r.character_maximum_length as number, precision: r.datetime_precision as number }),
          nullable: r.is_nullable === 'YES',
          default: normalizeDefault(r.column_default),
        })),
        primaryKey: pk.map((r) => r.column_name),
      };
    }
    case 'mariadb': {
      const rows = await query<Record<string, unknown>>(
        ds,
        `SELECT column_name AS name, column_type AS type, is_nullable AS nullable, column_default AS dflt
           FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position`,
        [table],
      );
      const pk = await query<{ name: string }>(
        ds,
        `SELECT column_name AS name FROM information_schema.statistics
          WHERE table_schema = DATABASE() AND table_name = ? AND index_name = 'PRIMARY' ORDER BY seq_in_index`,
        [table],
      );
      return {
        columns: rows.map((r) => ({
          name: String(r.name),
          type: shape(db, { type: String(r.type) }),
          nullable: r.nullable === 'YES',
          default: normalizeDefault(r.dflt === 'NULL' ? null : r.dflt),
        })),
        primaryKey: pk.map((r) => r.name),
      };
    }
    case 'sqlite': {
      const rows = await query<{ name: string; type: string; notnull: number; dflt_value: unknown; pk: number }>(ds, `PRAGMA table_info("${table}")`);
      return {
        columns: rows.map((r) => ({ name: r.name, type: shape(db, { type: r.type }), nullable: r.notnull === 0, default: normalizeDefault(r.dflt_value) })),
        primaryKey: rows
          .filter((r) => r.pk > 0)
          .sort((a, b) => a.pk - b.pk)
          .map((r) => r.name),
      };
    }
  }
}

async function indexColumns(db: TestDatabase, ds: DataSource, table: string, index: string): Promise<string[]> {
  switch (db.kind) {
    case 'postgres': {
      const rows = await query<{ name: string }>(
        ds,
        `SELECT a.attname AS name FROM pg_index i
           JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
           JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, position) ON true
           JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
          WHERE c.relname = ? AND t.relname = ? AND t.relnamespace = current_schema()::regnamespace ORDER BY k.position`,
        [index, table],
      );
      return rows.map((r) => r.name);
    }
    case 'mariadb': {
      const rows = await query<{ name: string }>(
        ds,
        `SELECT column_name AS name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ? ORDER BY seq_in_index`,
        [table, index],
      );
      return rows.map((r) => r.name);
    }
    case 'sqlite': {
      const rows = await query<{ name: string; seqno: number }>(ds, `PRAGMA index_info("${index}")`);
      return rows.sort((a, b) => a.seqno - b.seqno).map((r) => r.name);
    }
  }
}

describeEachDatabase('election schema', (db) => {
  let ds: DataSource;
  beforeAll(async () => {
    ds = await db.connect();
  });

  test('gemstone_election_candidate: columns, primary key (ns, candidate_id), no other index (a heartbeat rewrites expires_at)', async () => {
    expect(await describeTable(db, ds, 'gemstone_election_candidate')).toEqual({
      columns: [
        { name: 'ns', type: 'string(255)', nullable: false, default: null },
        { name: 'candidate_id', type: 'uuid', nullable: false, default: null },
        { name: 'last_heartbeat_at', type: 'instant(ms)', nullable: false, default: null },
        { name: 'expires_at', type: 'instant(ms)', nullable: false, default: null },
        { name: 'metadata', type: 'text', nullable: true, default: null },
        { name: 'priority', type: 'integer', nullable: false, default: '0' },
        // PostgreSQL says true, MariaDB and SQLite store booleans as 1
        { name: 'eligible', type: 'boolean', nullable: false, default: db.kind === 'postgres' ? 'true' : '1' },
      ],
      primaryKey: ['ns', 'candidate_id'],
    });
    expect(await indexColumns(db, ds, 'gemstone_election_candidate', ELECTION_INDEX)).toEqual([]);
    if (db.kind === 'postgres') {
      // Room on every page for the next version of a row: heartbeats and renewals are HOT updates.
      const options = await query<{ relname: string; reloptions: string[] | null }>(
        ds,
        `SELECT relname, reloptions FROM pg_class WHERE relname IN ('gemstone_election_candidate', 'gemstone_election_leader') AND relnamespace = current_schema()::regnamespace ORDER BY relname`,
      );
      expect(options).toEqual([
        { relname: 'gemstone_election_candidate', reloptions: ['fillfactor=70'] },
        { relname: 'gemstone_election_leader', reloptions: ['fillfactor=70'] },
      ]);
    }
  });

  test('gemstone_election_history: columns, primary key (ns, term), index (ended_at)', async () => {
    expect(await describeTable(db, ds, 'gemstone_election_history')).toEqual({
      columns: [
        { name: 'ns', type: 'string(255)', nullable: false, default: null },
        { name: 'term', type: 'bigint', nullable: false, default: null },
        { name: 'leader_id', type: 'uuid', nullable: false, default: null },
        { name: 'acquired_at', type: 'instant(ms)', nullable: false, default: null },
        { name: 'ended_at', type: 'instant(ms)', nullable: true, default: null },
        { name: 'end_reason', type: 'string(16)', nullable: true, default: null },
      ],
      primaryKey: ['ns', 'term'],
    });
    expect(await indexColumns(db, ds, 'gemstone_election_history', 'IDX_gemstone_election_history_ended_at')).toEqual(['ended_at']);
  });

  test('gemstone_election_run: columns, primary key (ns, name, slot), indexes (slot, ns, name, finished_at) and (ns, slot, name)', async () => {
    expect(await describeTable(db, ds, 'gemstone_election_run')).toEqual({
      columns: [
        { name: 'ns', type: 'string(255)', nullable: false, default: null },
        { name: 'name', type: 'string(100)', nullable: false, default: null },
        { name: 'slot', type: 'instant(ms)', nullable: false, default: null },
        { name: 'state', type: 'string(16)', nullable: false, default: null },
        { name: 'attempt', type: 'integer', nullable: false, default: null },
        { name: 'term', type: 'bigint', nullable: false, default: null },
        { name: 'candidate_id', type: 'uuid', nullable: false, default: null },
        { name: 'started_at', type: 'instant(ms)', nullable: true, default: null },
        { name: 'finished_at', type: 'instant(ms)', nullable: true, default: null },
        { name: 'error', type: 'text', nullable: true, default: null },
      ],
      primaryKey: ['ns', 'name', 'slot'],
    });
    expect(await indexColumns(db, ds, 'gemstone_election_run', 'IDX_gemstone_election_run_slot')).toEqual(['slot', 'ns', 'name', 'finished_at']);
    expect(await indexColumns(db, ds, 'gemstone_election_run', 'IDX_gemstone_election_run_ns_slot')).toEqual(['ns', 'slot', 'name']);
  });

  test('gemstone_election_leader: columns, primary key (ns), term BIGINT NOT NULL DEFAULT 0', async () => {
    expect(await describeTable(db, ds, 'gemstone_election_leader')).toEqual({
      columns: [
        { name: 'ns', type: 'string(255)', nullable: false, default: null },
        { name: 'leader_id', type: 'uuid', nullable: true, default: null },
        { name: 'lease_expires_at', type: 'instant(ms)', nullable: true, default: null },
        { name: 'updated_at', type: 'instant(ms)', nullable: false, default: null },
        { name: 'term', type: 'bigint', nullable: false, default: '0' },
      ],
      primaryKey: ['ns'],
    });
  });

  test('the table refuses a negative term and a second row for one namespace', async () => {
    const space = ns();
    const now = db.kind === 'postgres' ? 'now()' : db.kind === 'mariadb' ? 'UTC_TIMESTAMP(6)' : "strftime('%Y-%m-%d %H:%M:%f','now')";
    await expect(query(ds, `INSERT INTO gemstone_election_leader (ns, leader_id, updated_at, term) VALUES (?, ?, ${now}, -1)`, [space, uuid()])).rejects.toThrow();
    await query(ds, `INSERT INTO gemstone_election_leader (ns, updated_at) VALUES (?, ${now})`, [space]);
    expect(await query(ds, 'SELECT term FROM gemstone_election_leader WHERE ns = ?', [space])).toEqual([{ term: db.kind === 'sqlite' ? 0 : '0' }]);
    await expect(query(ds, `INSERT INTO gemstone_election_leader (ns, updated_at) VALUES (?, ${now})`, [space])).rejects.toThrow();
  });

  test('ns holds 255 characters, also outside ASCII', async () => {
    const space = '界'.repeat(255);
    const now = db.kind === 'postgres' ? 'now()' : db.kind === 'mariadb' ? 'UTC_TIMESTAMP(6)' : "strftime('%Y-%m-%d %H:%M:%f','now')";
    const id = uuid();
    await query(ds, `INSERT INTO gemstone_election_candidate (ns, candidate_id, last_heartbeat_at, expires_at) VALUES (?, ?, ${now}, ${now})`, [space, id]);
    const rows = await query<{ ns: string }>(ds, 'SELECT ns FROM gemstone_election_candidate WHERE candidate_id = ?', [id]);
    expect(rows.map((r) => r.ns)).toEqual([space]);
  });
});
