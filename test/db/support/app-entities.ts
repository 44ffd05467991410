/**
 * Entities of a pretend application that adds gemstone-utils to its own DataSource. Their tables
 * belong to the application: the library must never create, alter or drop them.
 */
import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'app_widget' })
export class AppWidget {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Column({ type: 'varchar', length: 100 })
  name!: string;
}

/** Listed in the application's entities but never created by it: initDb must not create it either. */
@Entity({ name: 'app_gadget' })
export class AppGadget {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Column({ type: 'varchar', length: 50 })
  label!: string;
}

/**
 * The application's own `app_widget` table as a DBA made it: an extra column and index the entity
 * does not know, so any attempt by TypeORM to "fix" the table would show in a schema dump.
 */
export const CREATE_APP_WIDGET = [
  'CREATE TABLE app_widget (id int NOT NULL PRIMARY KEY, name varchar(100) NOT NULL, legacy_note varchar(20) NULL)',
  'CREATE INDEX app_widget_legacy_note ON app_widget (legacy_note)',
  "INSERT INTO app_widget (id, name, legacy_note) VALUES (1, 'sprocket', 'kept'), (2, 'gear', NULL)",
];
