import { GemstoneElectionTables1763683200000 } from './1763683200000-GemstoneElectionTables';

export { GemstoneElectionTables1763683200000 };

/** Every migration of the election module, oldest first. */
export const electionMigrations = [GemstoneElectionTables1763683200000] as const;
