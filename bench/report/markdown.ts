/** The run as Markdown tables (bench/results/latest.md; docs/benchmarks.md quotes them). */
import type { RepeatedResult } from '../lib/measure';
import { SCENARIOS } from '../suites/hot-path';
import { PEER_IMPLEMENTATIONS } from '../suites/peer';
import { each, LABEL, ms, n, table, x } from './format';
import { renderSchedules } from './schedules';
import type { BenchReport } from './types';

const lat = (r: RepeatedResult | undefined) => (r ? `${ms(r.latency.p50)} / ${ms(r.latency.p99)}` : '–');

export function renderMarkdown(report: BenchReport): string {
  const { meta } = report;
  const out: string[] = [];
  out.push(
    `Run: ${meta.date} · \`${meta.command}\` · ${meta.durationSeconds.toFixed(0)} s · ${meta.machine.cpus} × ${meta.machine.cpuModel}, ` +
      `${meta.machine.memoryGiB} GiB, ${meta.machine.os}, Node ${meta.machine.node}, TypeORM ${meta.machine.typeorm} · ` +
      each(report)
        .map(([k, r]) => `${LABEL[k]} ${r.version ?? '?'}`)
        .join(', '),
  );

  const hot = each(report).filter(([, r]) => r.hotPath);
  if (hot.length) {
    const sizes = hot[0]?.[1].hotPath?.sizes;
    out.push(
      `### Hot path: one caller, calls back to back\n\n${sizes?.reps} repetitions × ${sizes?.calls} calls after ${sizes?.warmup} warm-up calls, implementations taking turns in chunks of 100 calls. ` +
        'Throughput: median over repetitions; latency p50 / p99 in ms over all calls; ratio: median of the per-repetition ratios.',
    );
    const rows: string[][] = [];
    for (const [kind, r] of hot) {
      const h = r.hotPath!;
      for (const scenario of SCENARIOS) {
        const s = h.scenarios[scenario];
        rows.push([
          LABEL[kind],
          scenario,
          n(s.library?.throughput ?? NaN),
          n(s.baseline?.throughput ?? NaN),
          s.storedFn ? n(s.storedFn.throughput) : '–',
          `**${x(h.ratioToBaseline[scenario])}**`,
          h.ratioToStoredFunction ? x(h.ratioToStoredFunction[scenario]) : '–',
          lat(s.library),
          lat(s.baseline),
          s.storedFn ? lat(s.storedFn) : '–',
        ]);
      }
    }
    out.push(
      table(
        ['database', 'elect', 'library /s', 'baseline /s', 'stored fn /s', 'library ÷ baseline', 'library ÷ stored fn', 'library p50 / p99', 'baseline p50 / p99', 'stored fn p50 / p99'],
        rows,
      ),
    );
  }

  const contention = each(report).filter(([, r]) => r.contention?.length);
  if (contention.length) {
    out.push(
      '### Contention: N candidates on one namespace, one connection each\n\nClosed loop per candidate in its own worker thread; percentiles in ms (median over repetitions); ' +
        'follower = every candidate but the leader. Ratio: median of per-repetition ratios.',
    );
    const rows: string[][] = [];
    for (const [kind, r] of contention) {
      for (const p of r.contention!) {
        rows.push([
          LABEL[kind],
          String(p.concurrency),
          `${ms(p.library.p50)} / ${ms(p.library.p99)}`,
          `${ms(p.baseline.p50)} / ${ms(p.baseline.p99)}`,
          ms(p.library.followerP99),
          ms(p.baseline.followerP99),
          `**${x(p.followerP99Ratio)}**`,
          `${n(p.library.throughput)} / ${n(p.baseline.throughput)}`,
          `${p.library.errors} / ${p.baseline.errors}`,
          p.library.exactlyOneLeader && p.baseline.exactlyOneLeader ? 'yes' : '**NO**',
        ]);
      }
    }
    out.push(
      table(
        ['database', 'N', 'library p50 / p99', 'baseline p50 / p99', 'library follower p99', 'baseline follower p99', 'follower p99 ratio', 'calls/s library / baseline', 'errors', 'one leader'],
        rows,
      ),
    );
  }

  const scale = each(report).filter(([, r]) => r.scale);
  if (scale.length) {
    const sizes = scale[0]?.[1].scale?.sizes;
    out.push(
      `### Scale: namespaces (${sizes?.candidatesPerNamespace} candidates each)\n\nEach size in its own database, sizes interleaved in chunks; ${sizes?.reps} × ${sizes?.calls} calls, ` +
        'each a random candidate of a random namespace. p50 / p99 in ms; ratio: median of per-repetition p50 ratios. ' +
        'The raw baseline makes the same calls on the same database, taking turns with the library: its ratio is what the larger database costs by itself. ' +
        "Statements per call: the library's, warm-up included.",
    );
    const counts = scale[0]?.[1].scale?.points.map((p) => p.namespaces) ?? [];
    out.push(
      table(
        [
          'database',
          ...counts.map((c) => `${n(c)} ns`),
          'largest ÷ smallest p50',
          'baseline: largest ÷ smallest p50',
          `statements per call (${counts.map(n).join(' / ')} ns)`,
          `listCandidates (${n(sizes?.listCandidates ?? NaN)} active) p50 / p99`,
        ],
        scale.map(([kind, r]) => [
          LABEL[kind],
          ...r.scale!.points.map((p) => lat(p.elect)),
          `**${x(r.scale!.p50Ratio)}**`,
          x(r.scale!.baselineP50Ratio),
          r.scale!.points.map((p) => p.statementsPerCall.toFixed(1)).join(' / '),
          `${lat(r.scale!.list.result)} (${n(r.scale!.list.returned)} returned)`,
        ]),
      ),
    );
  }

  const load = each(report).filter(([, r]) => r.load);
  if (load.length) {
    const sizes = load[0]?.[1].load?.sizes;
    out.push(
      `### Load: transactions per call and per tick\n\nTransactions, not statements: a TypeORM logger that sees every statement on the connection counts each transaction once, when it starts ` +
        '(an explicit BEGIN / START TRANSACTION, or any other statement but a setting sent outside any transaction: autocommit); statements inside it, settings (SET, SHOW, PRAGMA) and a BEGIN that failed are not counted. ' +
        `Statements sent are given in parentheses. Elector ticks: ${sizes?.electors} LeaderElectors, intervalMs ${sizes?.intervalMs}, over ${sizes?.windowMs} ms; a tick runs from one candidate-row touch to the next, ` +
        'and transactions per tick is the most transactions started within any whole tick. ' +
        'Each transaction counted ended committed or rolled back (a ROLLBACK, or a failed COMMIT or autocommit statement): the window column gives both, and a call\'s rolled-back transactions are named after its count. ' +
        `Server cross-checks: over ${sizes?.elects} renewals on the library's connection, PostgreSQL \`pg_stat_database\` xact_commit + xact_rollback and MariaDB session Com_commit + Com_rollback (explicit transactions only); ` +
        'over the elector windows, MariaDB only: each elector\'s own session Com_commit + Com_rollback, summed, per tick (PostgreSQL counts per database, not per connection, and publishes another connection\'s counts up to a second late: no exact reading while the electors run; SQLite keeps no counter).',
    );
    out.push(
      table(
        [
          'database',
          'renew: transactions (statements)',
          'follower: transactions (statements)',
          'takeover: transactions (statements)',
          'elector ticks (leader + followers)',
          'elector window: transactions = committed + rolled back',
          'transactions per tick (max)',
          'server count per renewal (server / logger)',
          'server count per tick, elector windows (server / logger, ticks)',
        ],
        load.map(([kind, r]) => {
          const l = r.load!;
          const pc = (p: { statements: number; transactions: number; rolledBack?: number }) =>
            `${p.transactions.toFixed(2)} (${p.statements.toFixed(1)})${p.rolledBack ? `, ${p.rolledBack.toFixed(2)} rolled back` : ''}`;
          const server = l.serverCount;
          const window = l.serverPerTick;
          const sum = (f: (e: (typeof l.electors)[number]) => number | undefined) => l.electors.reduce((n, e) => n + (f(e) ?? 0), 0);
          return [
            LABEL[kind],
            pc(l.elect.renew),
            pc(l.elect.follower),
            pc(l.elect.takeover),
            l.electors.map((e) => `${e.ticks}${e.leader ? ' (L)' : ''}`).join(' + '),
            `${sum((e) => e.transactions)} = ${sum((e) => e.committed)} + ${sum((e) => e.rolledBack)}${sum((e) => e.open) ? ` + ${sum((e) => e.open)} open at the end` : ''}`,
            `**${l.maxTransactionsPerTick.toFixed(2)}**`,
            server ? `${server.perElect.toFixed(2)} (${server.transactions} / ${server.logged})` : '–',
            window ? `${window.perTick.toFixed(2)} (${window.transactions} / ${window.logged}, ${window.ticks})` : '–',
          ];
        }),
      ),
    );
  }

  const failover = each(report).filter(([, r]) => r.failover);
  if (failover.length) {
    const sizes = failover[0]?.[1].failover?.sizes;
    out.push(
      `### Failover: ${sizes?.trials} trials each, ${sizes?.candidates} candidate processes, lease ${sizes?.expireSeconds} s, tick ${sizes?.intervalMs} ms\n\n` +
        "Crash: SIGKILL of the leader's process → another process's 'elected'. Graceful: `stop()` called → another's 'elected'. ms.",
    );
    out.push(
      table(
        ['database', 'crash median', 'crash p95', 'crash limit (lease + tick)', 'graceful median', 'graceful p95', 'failed trials', 'overlapping leaderships'],
        failover.map(([kind, r]) => {
          const f = r.failover!;
          return [
            LABEL[kind],
            `**${n(f.crash.median)}**`,
            n(f.crash.p95),
            n(f.crash.limitMs),
            `**${ms(f.graceful.median)}**`,
            ms(f.graceful.p95),
            String(f.crash.failed + f.graceful.failed),
            String(f.overlaps),
          ];
        }),
      ),
    );
  }

  const group = each(report).filter(([, r]) => r.group);
  if (group.length) {
    const g0 = group[0]![1].group!;
    const sizes = g0.sizes;
    out.push(
      `### Many leases per process: LeaderElectorGroup, ${sizes.processes} processes, lease ${sizes.expireSeconds} s, tick ${sizes.intervalMs} ms` +
        (sizes.large ? ` (from ${n(sizes.large.from)} namespaces: lease ${sizes.large.expireSeconds} s, tick ${sizes.large.intervalMs} ms)` : ''),
    );
    if (group.some(([, r]) => r.group!.points.length)) {
      out.push(
        `Per N, process 0 starts alone and acquires all N leases, then the others join; ${sizes.measureTicks} ticks of process 0 measured ` +
          "(the `'tick'` event's duration, ms: the leader renews N leases in its tick, a follower observes N held ones). " +
          'Transactions per tick per process counted by a TypeORM logger in each worker between two ticks, over every whole tick of every process ' +
          '(the background pruning of expired rows, at most once a minute and never inside a tick, counted apart; on MySQL/MariaDB a transaction ' +
          'rolled back after its bounded wait for one of its own lease rows ran out (or a deadlock), which changed nothing and is followed by the tick\'s rerun, counted apart too: ' +
          `${group.map(([kind, r]) => `${LABEL[kind]} ${n(r.group!.points.reduce((sum, p) => sum + (p.transactionsPerTick.lockWaitReruns ?? 0), 0))}`).join(', ')}). ` +
          'Crash: process 0 SIGKILLed; from the kill to the last re-acquisition of its leases by the survivors, database clock (history table); ' +
          "limit: that size's own lease + 2 of its ticks. A case fails when process 0 loses any lease before the kill (a measured tick holding fewer than all N, " +
          "a lease it ended or another process took, fewer than all N live at the kill). " +
          `Chart: \`group-tick-vs-namespaces.svg\`.`,
      );
      const rows: string[][] = [];
      for (const [kind, r] of group) {
        for (const p of r.group!.points) {
          rows.push([
            LABEL[kind],
            n(p.namespaces),
            `${ms(p.leader.p50)} / ${ms(p.leader.p99)}`,
            `${ms(p.follower.p50)} / ${ms(p.follower.p99)}`,
            p.transactionsPerTick.min === p.transactionsPerTick.max ? `**${p.transactionsPerTick.max}**` : `**${p.transactionsPerTick.min}–${p.transactionsPerTick.max}**`,
            n(p.transactionsPerTick.ticks),
            `${n(p.reacquired)} / ${n(p.killedLeases)}`,
            `**${p.reacquireMs === null ? '–' : n(p.reacquireMs)}**`,
            n(p.reacquireLimitMs),
            p.survivorLeases.map(n).join(' / '),
            p.failures.length ? '**FAILED**' : 'ok',
          ]);
        }
      }
      out.push(
        table(
          ['database', 'namespaces', 'leader tick p50 / p99', 'follower tick p50 / p99', 'txns per tick', 'ticks counted', 'crash: re-acquired', 'crash: last re-acquired (ms)', 'crash limit (ms)', 'survivors hold', 'case'],
          rows,
        ),
      );
      const ratios = group.map(([kind, r]) => `${LABEL[kind]} ${x(r.group!.p50Ratio)}`).join(', ');
      // The limit each size was judged against: its own lease + 2 of its own ticks.
      const limits = [...new Map(group.flatMap(([, r]) => r.group!.points).map((p) => [p.namespaces, p] as const)).values()]
        .sort((a, b) => a.namespaces - b.namespaces)
        .map((p) => `${n(p.namespaces)} namespaces ${n(p.reacquireLimitMs)} ms (lease ${p.expireSeconds} s + 2 × ${n(p.intervalMs)} ms)`);
      out.push(`Leader tick p50 at 1,000 ÷ at 1 namespace: ${ratios}. Crash limit (lease + 2 ticks), per size: ${limits.join('; ')}.`);
      const failed = group.flatMap(([kind, r]) => r.group!.points.flatMap((p) => p.failures.map((failure) => `- ${LABEL[kind]}, ${n(p.namespaces)} namespaces: ${failure}`)));
      if (failed.length) out.push(`Failed cases (leases lost before the kill; also listed under correctness failures):\n\n${failed.join('\n')}`);
    }
    const balanced = group.filter(([, r]) => r.group!.balance);
    if (balanced.length) {
      const b0 = balanced[0]![1].group!.balance!;
      out.push(
        `Balance (\`balance: true\`): over ${n(b0.namespaces)} namespaces, the first of ${b0.processes} processes takes every lease, then the others join together; then the first is SIGKILLed. ` +
          'Settled: from the last join (its `start()` resolved) or the kill to the last leadership change (history table, database clock) before the leader ' +
          `table showed the even split; changes after: terms begun or ended over the next ${b0.quietTicks} ticks (flapping). ` +
          'Txns per tick: over the ticks that handed nothing over; hand-over ticks apart — a tick that ended leaderships and the next one, which ' +
          'vacates the leases given up in its own transaction (SQLite: in a transaction of its own right after the tick that decided it).',
      );
      out.push(
        table(
          ['database', 'after last join', 'settled (ms)', 'ticks', 'changes after', 'after a death', 'settled (ms)', 'ticks', 'changes after', 'txns per tick', 'hand-over ticks: max txns'],
          balanced.map(([kind, r]) => {
            const b = r.group!.balance!;
            const ticks = (v: number | null) => (v === null ? '–' : (v / r.group!.sizes.intervalMs).toFixed(1));
            return [
              LABEL[kind],
              b.joinCounts.join(' / '),
              `**${b.joinSettleMs === null ? '–' : n(b.joinSettleMs)}**`,
              ticks(b.joinSettleMs),
              String(b.changesAfterJoinSettle),
              b.deathCounts.join(' / '),
              `**${b.deathSettleMs === null ? '–' : n(b.deathSettleMs)}**`,
              ticks(b.deathSettleMs),
              String(b.changesAfterDeathSettle),
              b.transactionsPerTick.min === b.transactionsPerTick.max ? String(b.transactionsPerTick.max) : `${b.transactionsPerTick.min}–${b.transactionsPerTick.max}`,
              `${b.handOverTicks.ticks ? b.handOverTicks.maxTransactions : '–'} (${b.handOverTicks.ticks} ticks)`,
            ];
          }),
        ),
      );
      out.push(
        'How each join settled, tick by tick (host clock, ms after the last join: process, leases it held after the tick, leaderships the tick ended):\n\n' +
          balanced
            .map(([kind, r]) => {
              const steps = r.group!.balance!.joinTrace ?? [];
              const shown = steps.map((t) => `+${n(t.ms)} p${t.process} ${n(t.held)}${t.lost ? ` (−${n(t.lost)})` : ''}`);
              return `- ${LABEL[kind]}: ${shown.length ? shown.join(', ') : '–'}`;
            })
            .join('\n'),
      );
    }
    out.push(
      'Never held twice: ' +
        group
          .map(([kind, r]) => {
            const s = r.group!.safety;
            return `${LABEL[kind]}: ${s.eventOverlaps} overlaps among ${n(s.intervals)} reported leaderships, ${s.historyViolations} violations among ${n(s.historyRows)} history rows`;
          })
          .join('; ') +
        ' (processes: per namespace, intervals from `elected` to `demoted` or the kill never overlap across processes; history: per namespace, terms 1..n, each ended no later than the next began).',
    );
    const slow = group.filter(([, r]) => r.group!.tickErrors.length);
    if (slow.length) {
      out.push(
        `Tick reports (phase \`tick\`: a tick tried again, or not answered within the lease on a busy machine; shown, not judged): ` +
          slow.map(([kind, r]) => `${LABEL[kind]} ${r.group!.tickErrors.length} (${r.group!.tickErrors.slice(0, 2).join('; ')})`).join('; '),
      );
    }
  }

  const peer = each(report).filter(([, r]) => r.peer);
  if (peer.length) {
    const p = peer[0]![1].peer!;
    const { sizes } = p;
    out.push(
      `### Side by side on PostgreSQL: this library, nest-leader-election ${p.peerVersion}, a classic single-table lease function in PL/pgSQL\n\n` +
        `Same run, equal settings: lease ${sizes.expireSeconds} s (the peer's statement always writes a 15 s lease), tick ${sizes.intervalMs} ms. ` +
        `Renewal: the leader's renewing call back to back on one connection, ${sizes.reps} × ${sizes.calls} calls after ${sizes.warmup} warm-up calls, interleaved in chunks of 100; ` +
        `throughput median over repetitions, latency p50 / p99 in ms. Failover: ${sizes.candidates} processes per implementation running its own loop, ` +
        `${sizes.trials} trials each; crash = SIGKILL of the leader → another leads; graceful = stop / release → another leads (the PL/pgSQL function has no release). ` +
        'Ratios library ÷ other: renewal throughput (higher is better for the library), failover medians (lower is better for the library). See bench/suites/peer.ts.',
    );
    const label = { library: 'this library', peer: 'nest-leader-election', plpgsql: 'PL/pgSQL function' } as const;
    const s = (v: number) => (Number.isFinite(v) ? (v / 1000).toFixed(2) : '–');
    const failures = (f: { trials: number[]; failed: number } | null) => (f ? `${f.trials.length} ok / ${f.failed} failed` : '–');
    out.push(
      table(
        ['implementation', 'renewals /s', 'renewal p50 / p99', 'library ÷ it (renewal /s)', 'crash failover median (s)', 'crash max (s)', 'library ÷ it (crash)', 'graceful hand-over median (s)', 'library ÷ it (graceful)', 'trials'],
        PEER_IMPLEMENTATIONS.map((implementation) => {
          const crash = p.crash[implementation];
          const graceful = p.graceful[implementation];
          const other = implementation === 'library' ? undefined : implementation;
          return [
            label[implementation],
            n(p.renewal[implementation].throughput),
            lat(p.renewal[implementation]),
            other ? `**${x(p.renewalRatio[other])}**` : '–',
            s(crash.median),
            s(crash.max),
            other ? `**${x(p.crashRatio[other])}**` : '–',
            graceful ? (graceful.median < 1000 ? `${ms(graceful.median)} ms` : `${s(graceful.median)} s`) : '–',
            other === 'peer' ? `**${x(p.gracefulRatio.peer)}**` : '–',
            `crash ${failures(crash)}; graceful ${failures(graceful)}`,
          ];
        }),
      ),
    );
    if (p.errors.length) out.push(`Errors reported by the processes: ${p.errors.slice(0, 5).join('; ')}`);
  }

  out.push(...renderSchedules(report));

  const skipped = each(report).flatMap(([kind, r]) => Object.entries(r.skipped ?? {}).map(([suite, why]) => `- ${LABEL[kind]} ${suite}: ${why}`));
  if (skipped.length) out.push(`Skipped:\n\n${skipped.join('\n')}`);

  out.push('### Targets');
  out.push(
    table(
      ['target', 'database', 'measured', 'limit', 'verdict'],
      report.targets.map((t) => [
        t.target,
        LABEL[t.database],
        t.value === null ? '–' : t.value < 10 ? t.value.toFixed(2) : n(t.value),
        t.limit,
        t.met === null ? '–' : t.met ? 'met' : t.note ? '**missed** (case failed: see correctness failures)' : '**missed**',
      ]),
    ),
  );
  if (report.failures.length) out.push(`Correctness failures:\n\n${report.failures.map((f) => `- ${f}`).join('\n')}`);
  return out.join('\n\n') + '\n';
}
