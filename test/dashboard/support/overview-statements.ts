/**
 * Which of the statements a dashboard sends read every namespace: those that list the namespaces
 * from the leader table without naming the ones they want (a page's own rows name theirs:
 * `WHERE ns IN (…)`).
 */
export function readsEveryNamespace(statement: string): boolean {
  return /SELECT ns FROM [`"]?gemstone_election_leader[`"]? UNION/i.test(statement.replace(/\s+/g, ' '));
}
