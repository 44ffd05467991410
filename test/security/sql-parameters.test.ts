/**
 * The dynamic half of the rule in sql-rule.ts: every statement the package sends through TypeORM
 * is recorded (a TypeORM `logger`, a supported option) while the whole API runs with
 * recognizable values; none of them may appear in any SQL text — only among the parameters.
 */
import type { DataSource, Logger } from 'typeorm';
import { ElectionService, LeaderElector } from 'gemstone-utils';
import { describeEachDatabase, uuid } from '../support/databases';

interface Sent {
  text: string;
  parameters: unknown[];
}

class Recorder implements Logger {
  readonly sent: Sent[] = [];
  recording = false;
  logQuery(query: string, parameters?: unknown[]) {
    if (this.recording) this.sent.push({ text: query, parameters: parameters ?? [] });
  }
  logQueryError() {}
  logQuerySlow() {}
  logSchemaBuild() {}
  logMigration() {}
  log() {}
}

describeEachDatabase('values reach the database only as parameters', (db) => {
  let ds: DataSource;
  const recorder = new Recorder();

  beforeAll(async () => {
    ds = await db.connect({ logging: ['query'], logger: recorder } as never);
  });

  test('the whole API with hostile values: no value in any SQL text', async () => {
    const token = uuid().slice(0, 8);
    const ns = `ns'"\`;--${token}`;
    const leader = uuid().toUpperCase();
    const other = uuid();
    const expireSeconds = 1234.567;
    const svc = new ElectionService(ds, { expireSeconds });

    recorder.recording = true;
    await svc.registerCandidate(leader, { ns });
    await svc.heartbeat(other, { ns });
    await svc.elect(leader, { ns });
    await svc.elect(other, { ns });
    await svc.isLeader(leader, { ns });
    await svc.listCandidates({ ns });
    const info = await svc.getLeader({ ns });
    await ds.transaction(async (manager) => {
      await svc.assertLeader(leader, { ns, term: info!.term, session: manager });
    });
    await svc.resign(leader, { ns });
    await svc.elect(other, { ns });
    await svc.unregisterCandidate(other, { ns });
    const elector = new LeaderElector({ dataSource: ds, ns: `${ns}-elector`, expireSeconds, intervalMs: 500 });
    elector.on('error', () => undefined);
    await elector.start();
    expect(elector.isLeader).toBe(true);
    await elector.stop();
    recorder.recording = false;

    const values = [token, leader, leader.toLowerCase(), other, String(expireSeconds), String(Math.round(expireSeconds * 1e6))];
    const sent = recorder.sent;
    // The recorder saw the traffic, values included: otherwise this test would prove nothing.
    expect(sent.length).toBeGreaterThan(15);
    const params = JSON.stringify(sent.map((s) => s.parameters));
    expect(params).toContain(token);
    expect(params).toContain(leader.toLowerCase());
    expect(params).toContain(other);
    for (const { text } of sent) {
      for (const value of values) expect({ text, contains: text.includes(value) ? value : null }).toEqual({ text, contains: null });
    }
  });
});
