/**
 * A third-party module registers its own entities on the shared base — an entity class and an
 * `EntitySchema` — and `initDb` creates their tables and indexes, from several DataSources at
 * once, without touching the application's tables.
 */
import { Column, DataSource, DataSourceOptions, Entity, EntitySchema, Index, PrimaryColumn } from 'typeorm';
import { GemstoneDB, initDb } from 'gemstone-utils';
import { describeEachDatabase, TestDatabase } from '../support/databases';

@Entity({ name: 'plugin_job' })
@Index('IDX_plugin_job_queue_due', ['queue', 'dueAt'])
class PluginJob {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ type: 'varchar', length: 64 })
  queue!: string;

  @Column({ name: 'due_at', type: 'bigint' })
  dueAt!: string;
}

interface PluginNote {
  id: number;
  author: string;
  body: string;
}
const PluginNoteSchema = new EntitySchema<PluginNote>({
  name: 'PluginNote',
  tableName: 'plugin_note',
  columns: {
    id: { type: 'int', primary: true },
    author: { type: 'varchar', length: 64 },
    body: { type: 'varchar', length: 255 },
  },
  indices: [{ name: 'IDX_plugin_note_author', columns: ['author'], unique: true }],
});

/** The application's own entity: its table exists with another shape than the entity says. */
@Entity({ name: 'app_ledger' })
class AppLedger {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Column({ type: 'varchar', length: 100 })
  label!: string;
}

GemstoneDB.register({ entities: [PluginJob, PluginNoteSchema] });

async function tableShape(ds: DataSource, name: string) {
  const runner = ds.createQueryRunner();
  try {
    const table = await runner.getTable(name);
    if (!table) return undefined;
    return {
      columns: table.columns.map((c) => `${c.name} ${c.type} ${c.length} ${c.isNullable}`).sort(),
      indices: table.indices.map((i) => `${i.name} ${i.isUnique} ${i.columnNames.join(',')}`).sort(),
    };
  } finally {
    await runner.release();
  }
}

async function expectPluginTables(ds: DataSource): Promise<void> {
  const job = await tableShape(ds, 'plugin_job');
  const note = await tableShape(ds, 'plugin_note');
  expect(job?.columns.map((c) => c.split(' ')[0])).toEqual(['due_at', 'id', 'queue']);
  expect(job?.indices).toContain('IDX_plugin_job_queue_due false queue,due_at');
  expect(note?.columns.map((c) => c.split(' ')[0])).toEqual(['author', 'body', 'id']);
  expect(note?.indices).toContain('IDX_plugin_note_author true author');
}

describeEachDatabase('entities a third-party module registers on GemstoneDB', (db) => {
  test('register() without an argument registers nothing', () => {
    const before = GemstoneDB.entities;
    expect(() => GemstoneDB.register()).not.toThrow();
    expect(GemstoneDB.entities).toEqual(before);
  });

  test('initDb creates the tables and indexes of a registered class and EntitySchema', async () => {
    const ds = await db.connect();
    await expectPluginTables(ds);
    await ds.getRepository(PluginJob).insert({ id: 'j1', queue: 'mail', dueAt: '5' });
    await ds.getRepository(PluginNoteSchema).insert({ id: 1, author: 'ann', body: 'hi' });
    await expect(ds.getRepository(PluginNoteSchema).insert({ id: 2, author: 'ann', body: 'dup' })).rejects.toThrow();
    if (db.shared) {
      // A second initDb finds the tables and keeps their rows.
      const again = await db.connect();
      expect(await again.getRepository(PluginJob).count()).toBe(1);
    }
  });

  if (db.shared) {
    test('three DataSources running initDb at once on one fresh database all succeed', async () => {
      const fresh: TestDatabase = await db.sibling();
      const all = await Promise.all([0, 1, 2].map(() => fresh.connect()));
      for (const ds of all) await expectPluginTables(ds);
    });
  }

  test("an app table of another shape than its entity is left exactly as it was", async () => {
    const fresh: TestDatabase = await db.sibling();
    // The application initializes its DataSource itself (also a :memory: database keeps its table).
    const ds = fresh.track(new DataSource({ ...fresh.options(), entities: [AppLedger, ...GemstoneDB.entities] } as DataSourceOptions));
    await ds.initialize();
    await ds.query('CREATE TABLE app_ledger (id int NOT NULL PRIMARY KEY, legacy_code varchar(10) NULL)');
    await ds.query("INSERT INTO app_ledger (id, legacy_code) VALUES (1, 'x')");
    const before = await tableShape(ds, 'app_ledger');
    expect((await ds.driver.createSchemaBuilder().log()).upQueries.some((q) => /app_ledger/.test(q.query))).toBe(true);

    expect(await initDb(ds)).toBe(ds);
    await expectPluginTables(ds);
    expect(await tableShape(ds, 'app_ledger')).toEqual(before);
    expect(await ds.query('SELECT id, legacy_code FROM app_ledger')).toEqual([{ id: 1, legacy_code: 'x' }]);
  });
});
