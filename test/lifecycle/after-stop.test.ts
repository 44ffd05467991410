/**
 * After a loop's stop() — an elector's, a group's, a watch's end — nothing it started may still
 * run: a statement sent after the user's `dataSource.destroy()` is a crash at shutdown (an
 * unhandled rejection ends a Node process). Every loop runs under churn (leader changes, hand-overs
 * by priority, a resign behind the leader's back, group add/remove and balance, watches, LISTEN on
 * PostgreSQL, metrics, prunes — one of them outlasting its elector's stop bound), then everything
 * stops at once, the DataSources are destroyed and a few tick intervals pass. Run in a child
 * process (test/support/children/after-stop.js) so unhandled rejections are seen as Node sees
 * them; every statement is recorded through the DataSources' TypeORM logger with its instant.
 */
import { describeEachDatabase } from '../support/databases';
import { runNode } from '../support/children/spawn';

interface Statement {
  at: number;
  ds: string;
  text: string;
  error?: string;
}

interface Report {
  statements: number;
  leaderStatements: number;
  pruneStatements: number;
  stopMs: number;
  afterStop: Statement[];
  afterLateStop: Statement[];
  afterBreak: Statement[];
  watched: Array<{ name: string; seen: number }>;
  demotions: Array<{ loop: string; ns: string; reason: string }>;
  errors: Array<{ at: number; loop: string; phase: string; message: string }>;
  errorsAfterStop: unknown[];
  unhandled: unknown[];
  listenerConnections: number | null;
}

/** The first statements of a list, short, and how many there were. */
function brief(statements: Statement[]): string[] {
  const shown = statements.slice(0, 8).map((s) => `[${s.ds}] ${s.text.slice(0, 100)}${s.error ? ` → ${s.error}` : ''}`);
  return statements.length > shown.length ? [...shown, `… ${statements.length} in all`] : shown;
}

describeEachDatabase('after stop(), nothing a loop started runs', (db) => {
  test('every loop under churn, stopped, DataSource destroyed: no statement, no rejection, no error, no listener left', async () => {
    const { driver: _driver, ...options } = db.options() as unknown as Record<string, unknown>;
    const config = { options, kind: db.kind, shared: db.shared, url: db.url() };
    const result = await runNode(['test/support/children/after-stop.js', JSON.stringify(config)], { timeoutMs: 90_000 });
    const line = result.stdout.trim().split('\n').pop() ?? '';
    let parsed: { ok: boolean; report?: Report; error?: string };
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new Error(`the child printed no report (exit ${result.code}); stdout: ${result.stdout.slice(-2000)} stderr: ${result.stderr.slice(-2000)}`);
    }
    expect(parsed).toMatchObject({ ok: true });
    const report = parsed.report!;

    // The churn happened: statements were logged (better-sqlite3's synchronous steps and
    // PostgreSQL's named statements included), prunes ran, leadership changed hands.
    expect(report.leaderStatements).toBeGreaterThan(10);
    expect(report.pruneStatements).toBeGreaterThan(0);
    expect(report.demotions.filter((d) => d.reason === 'handed-over').length).toBeGreaterThan(0);
    expect(report.watched.every((w) => w.seen > 0)).toBe(true);
    // The late elector's stop gave up on its held work at its bound (what must then send nothing).
    expect(report.errors.filter((e) => e.loop === 'e4' && e.phase === 'stop')).toHaveLength(1);

    // The guarantees.
    expect(report.unhandled).toEqual([]);
    expect(brief(report.afterStop)).toEqual([]);
    expect(brief(report.afterLateStop)).toEqual([]);
    expect(brief(report.afterBreak)).toEqual([]);
    expect(report.errorsAfterStop).toEqual([]);
    expect(report.errors.filter((e) => /not open|destroy|closed state|terminated|pool/i.test(e.message))).toEqual([]);
    // No error at all, but the late elector's stop that gave up on its held work within its bound.
    expect(report.errors.filter((e) => !(e.loop === 'e4' && e.phase === 'stop'))).toEqual([]);
    if (db.kind === 'postgres') expect(report.listenerConnections).toBe(0);
  }, 120_000);
});
