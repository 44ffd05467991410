/**
 * An existing application's DataSource with gemstone-utils added. Type-checked by the build
 * (tsconfig.build.json includes it), so it cannot drift from the real API.
 */
import 'reflect-metadata';
import { Column, DataSource, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { ElectionService, GemstoneDB, initDb } from 'gemstone-utils';

/** One of the application's own entities. */
@Entity({ name: 'invoice' })
export class Invoice {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'varchar', length: 64 })
  number!: string;
}

// Every replica must reach the same database: a missing DATABASE_URL stops the app.
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('DATABASE_URL is not set: export DATABASE_URL=postgres://user:password@host:5432/app');

export const AppDataSource = new DataSource({
  type: 'postgres',
  url: databaseUrl,
  // The plugin's entities next to the app's: needed when the app initializes the DataSource
  // itself; `initDb` appends them anyway when it initializes it.
  entities: [Invoice, ...GemstoneDB.entities],
  // The plugin's migrations next to the app's, for deployments where DDL runs only through
  // migrations (then call initDb with `createTables: false`).
  migrations: [...GemstoneDB.migrations],
  // Safe even with `synchronize: true`: the plugin's entities opt out of schema sync.
  synchronize: false,
});

/** At startup: connect, create the election tables if missing, and build the service to inject. */
export async function bootstrap(): Promise<ElectionService> {
  await initDb(AppDataSource);
  return new ElectionService(AppDataSource, { expireSeconds: 30 });
}
