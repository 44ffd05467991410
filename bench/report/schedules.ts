/** The schedules suite's tables (see bench/suites/schedules.ts for what is measured and how). */
import { SLOT_JOBS } from '../suites/schedules';
import { each, LABEL, ms, n, table, x } from './format';
import type { BenchReport } from './types';

const code = (statements: string[]) => statements.map((s) => `\`${s.replace(/`/g, "'")}\``).join(' · ');

export function renderSchedules(report: BenchReport): string[] {
  const measured = each(report).filter(([, r]) => r.schedules);
  if (!measured.length) return [];
  const sizes = measured[0]![1].schedules!.sizes;
  const job = { empty: 'empty job', transaction: 'empty `run.transaction`' } as const;
  return [
    `### Schedules: slots one leader runs, and what idle schedules add to its ticks\n\n` +
      `Throughput: one LeaderElector on one connection leads; a schedule (\`everyMs: 1000\`, \`catchUp: 'all'\`) is registered with a backlog of ${n(sizes.backlog)} due slots ` +
      '(its newest recorded slot seeded that many seconds before the database clock), which the leader runs back to back: per slot a claim, the job, the finish ' +
      "(with `run.transaction`: the claim, then the job's transaction, which records `done`). Timed from the first slot's `'scheduleRun'` event to the last one's; " +
      `${sizes.reps} backlog(s) per job, the jobs taking turns; slots/s: median; ratio: median of per-repetition ratios. ` +
      'Transactions per slot: those that touched the runs table, counted by a TypeORM logger over the same span. Every backlog slot ended `done` at attempt 1.',
    table(
      ['database', ...SLOT_JOBS.map((j) => `${job[j]}: slots/s`), 'run.transaction ÷ empty job', ...SLOT_JOBS.map((j) => `${job[j]}: transactions per slot`)],
      measured.map(([kind, r]) => {
        const s = r.schedules!;
        return [
          LABEL[kind],
          ...SLOT_JOBS.map((j) => `**${n(s.throughput[j].slotsPerSecond)}**`),
          x(s.transactionRatio),
          ...SLOT_JOBS.map((j) => (Number.isFinite(s.throughput[j].runTransactionsPerSlot) ? s.throughput[j].runTransactionsPerSlot.toFixed(2) : '–')),
        ];
      }),
    ),
    `Idle ticks: two LeaderElectors in one process, each on its own connection, lead a namespace each, one without schedules and one with ${sizes.idleSchedules} ` +
      'whose next slot is about 12 h away; after the schedules\' look-backs (one statement each when the leadership starts), ' +
      `the statements each connection sent between two of its ticks, over ${sizes.ticks} ticks of ${sizes.intervalMs} ms each (a window with the background pruning, at most once a minute, left out), ` +
      "and the ticks' own duration (the `'tick'` event's, ms); then the two swap roles for as many ticks (the schedules cancelled, as many registered on the other). " +
      'Each column pools both leaders in that role. Statements per tick: what most windows sent; other ticks: windows that sent something else, on either side.',
    table(
      [
        'database',
        'statements per tick: none / idle schedules',
        'the same statements',
        'runs-table statements',
        'other ticks (fewest–most statements)',
        'tick p50 / p99: none',
        `tick p50 / p99: ${sizes.idleSchedules} idle`,
        'tick p50 ratio',
        'p50 per phase: with / without',
      ],
      measured.map(([kind, r]) => {
        const { none, idle, sameStatements, tickP50Ratio, phases } = r.schedules!.idle;
        const range = (s: { min: number; max: number }) => (s.min === s.max ? String(s.max) : `${s.min}–${s.max}`);
        return [
          LABEL[kind],
          `**${none.statementsPerTick.usual} / ${idle.statementsPerTick.usual}**`,
          sameStatements ? 'yes' : '**NO**',
          String(none.runStatements + idle.runStatements),
          `${none.other.ticks} / ${idle.other.ticks} (${range(none.statementsPerTick)} / ${range(idle.statementsPerTick)})`,
          `${ms(none.tickMs.p50)} / ${ms(none.tickMs.p99)}`,
          `${ms(idle.tickMs.p50)} / ${ms(idle.tickMs.p99)}`,
          `**${x(tickP50Ratio)}**`,
          phases.map((p) => `${ms(p.p50With)} / ${ms(p.p50Without)}`).join(' · '),
        ];
      }),
    ),
    'What the usual tick sent (most windows of each side), and the first other window of each side:\n\n' +
      measured
        .flatMap(([kind, r]) => {
          const { none, idle } = r.schedules!.idle;
          return [
            `- ${LABEL[kind]}: ${code(none.usual)}`,
            ...(none.other.first ? [`- ${LABEL[kind]}, other tick without schedules: ${code(none.other.first)}`] : []),
            ...(idle.other.first ? [`- ${LABEL[kind]}, other tick with idle schedules: ${code(idle.other.first)}`] : []),
          ];
        })
        .join('\n'),
  ];
}
