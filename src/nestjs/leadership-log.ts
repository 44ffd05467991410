import { Logger } from '@nestjs/common';
import type { DemotionReason, LeaderElector } from '../election/loop/elector';

/** Endings that are not the application's own doing: an operator should look. */
const UNPLANNED: readonly DemotionReason[] = ['lost', 'lease-expired-locally'];

/**
 * Logs the elector's leadership changes through Nest's `Logger`. Attached when the provider is
 * created, before any lifecycle hook, so the first election is logged too.
 */
export function logLeadership(elector: LeaderElector): void {
  const logger = new Logger('ElectionModule');
  const ns = JSON.stringify(elector.ns);
  const me = `(candidate ${elector.candidateId})`;
  elector.on('elected', (lease) => logger.log(`leading ${ns}, term ${lease.term} ${me}`));
  elector.on('demoted', (lease, reason) => {
    const message = `stopped leading ${ns}, term ${lease.term}: ${reason} ${me}`;
    if (UNPLANNED.includes(reason)) logger.warn(message);
    else logger.log(message);
  });
  elector.on('leader', (leaderId, term) => {
    // Our own election was logged as 'elected'.
    if (leaderId === elector.candidateId) return;
    logger.log(leaderId === null ? `${ns} has no leader ${me}` : `${ns} is led by ${leaderId}, term ${term} ${me}`);
  });
}
