/**
 * ElectionModule's `dashboard` option in a real Nest application (platform-express, a child
 * process): the dashboard is served at its path behind the `authorize` hook, on the module's
 * DataSource (the module's own elector shows as leader, its `@LeaderCron` schedule with its next
 * slot), and `app.close()` ends its live streams instead of waiting on them.
 */
import { ChildProcess, fork } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';
import { openEvents } from '../dashboard/support/http';
import { REPO_ROOT } from '../support/children/spawn';
import { describeEachDatabase, TYPEORM_LINE } from '../support/databases';

const NEST_MAJOR = Number(
  process.env['GEMSTONE_NEST_LINE'] ??
    (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'node_modules', '@nestjs', 'core', 'package.json'), 'utf8')) as { version: string }).version.split('.')[0],
);
/** As in docs-example.test.ts: on Nest 12 @nestjs/typeorm imports TypeORM as an ES module, which the 0.3 alias cannot replace. */
const RUNNABLE = !(TYPEORM_LINE === '0.3' && NEST_MAJOR >= 12);

function appScript(): string {
  const source = path.join(__dirname, 'support', 'dashboard-app.ts');
  const { outputText } = ts.transpileModule(fs.readFileSync(source, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, experimentalDecorators: true, emitDecoratorMetadata: true, esModuleInterop: true },
  });
  const file = path.join(REPO_ROOT, '.tmp', 'nestjs-dashboard', `app-${process.pid}.js`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, outputText);
  return file;
}

describeEachDatabase(
  'ElectionModule dashboard option',
  (db) => {
    let child: ChildProcess | undefined;
    afterAll(() => {
      child?.kill('SIGKILL');
    });

    const title = 'served at its path behind authorize, on the module\'s DataSource, with its elector\'s schedules; app.close() ends its streams';
    (RUNNABLE ? test : test.skip)(RUNNABLE ? title : `${title} [skipped: TypeORM 0.3 line on Nest ${NEST_MAJOR}]`, async () => {
      let output = '';
      const messages: Record<string, unknown>[] = [];
      child = fork(appScript(), [], {
        cwd: REPO_ROOT,
        execArgv: ['-r', './test/support/typeorm-line.js', '-r', './test/support/nest-line.js'],
        env: { ...process.env, DATABASE_URL: db.url().replace(/\?.*$/, ''), NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
      for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('message', (message) => messages.push(message as Record<string, unknown>));
      const exited = new Promise<number | null>((resolve) => child!.on('exit', resolve));
      const message = async (key: string, timeoutMs = 30_000) => {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const found = messages.find((m) => key in m);
          if (found) return found[key];
          if (child!.exitCode !== null || Date.now() > deadline) throw new Error(`no ${key} from the application: ${output}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      const base = `${String(await message('url')).replace('[::1]', '127.0.0.1')}/ops/election`;
      const ops = { headers: { 'x-ops': 'yes' } };

      const anonymous = await fetch(`${base}/`);
      expect(anonymous.status).toBe(401);
      const page = await fetch(base, ops);
      expect(page.status).toBe(200);
      expect(page.url).toBe(`${base}/`);
      expect(await page.text()).toContain('src="client/main.js"');
      const overview = (await (await fetch(`${base}/api/overview`, ops)).json()) as { rows: { ns: string; leaderId: string | null }[] };
      expect(overview.rows).toEqual([expect.objectContaining({ ns: 'nest-dashboard', leaderId: expect.any(String) })]);
      expect(output).toMatch(/dashboard mounted at \/ops\/election\//);
      // The module's elector hosts the @LeaderCron method: the page knows its next slot (3:00 UTC on 1 January).
      const schedules = (await (await fetch(`${base}/api/namespace/schedules?ns=nest-dashboard`, ops)).json()) as { schedules: { name: string; hosted: boolean; nextSlot: number | null }[] };
      expect(schedules.schedules).toEqual([expect.objectContaining({ name: 'Reports.yearly', hosted: true, nextSlot: expect.any(Number) })]);
      const next = new Date(schedules.schedules[0]!.nextSlot!);
      expect([next.getUTCMonth(), next.getUTCDate(), next.getUTCHours(), next.getUTCMinutes()]).toEqual([0, 1, 3, 0]);

      // An open stream: app.close() must end it rather than wait for the client to go.
      const events = await openEvents(`${base}/api/namespace/events?ns=nest-dashboard`, ops.headers);
      expect((await events.next((e) => e.event === 'leader')).data).toMatchObject({ ns: 'nest-dashboard', term: 1 });
      child.send('close');
      const closedInMs = Number(await message('closedInMs'));
      await events.ended;
      expect(closedInMs).toBeLessThan(5_000);
      expect(await exited).toBe(0);
    }, 60_000);
  },
  { kinds: ['sqlite'], sharedOnly: true },
);

