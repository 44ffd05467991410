import { GemstoneElectionTables1763683200000 } from './1763683200000-GemstoneElectionTables';
import { GemstoneElectionIdentity1795392000000 } from './1795392000000-GemstoneElectionIdentity';
import { GemstoneElectionRuns1796256000000 } from './1796256000000-GemstoneElectionRuns';
import { GemstoneElectionLeanHeartbeat1797120000000 } from './1797120000000-GemstoneElectionLeanHeartbeat';

export { GemstoneElectionTables1763683200000, GemstoneElectionIdentity1795392000000, GemstoneElectionRuns1796256000000, GemstoneElectionLeanHeartbeat1797120000000 };

/** Every migration of the election module, oldest first. */
export const electionMigrations = [
  GemstoneElectionTables1763683200000,
  GemstoneElectionIdentity1795392000000,
  GemstoneElectionRuns1796256000000,
  GemstoneElectionLeanHeartbeat1797120000000,
] as const;
