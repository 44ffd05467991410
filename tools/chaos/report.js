// @ts-check
'use strict';
/** The summary tables printed after a run. */
const Table = require('cli-table3');
const pc = require('picocolors');

/** @param {any} summary the object runChaos resolves to */
function printSummary(summary) {
  const checks = new Table({ head: ['check', 'result', 'detail'], colWidths: [48, 8, 90], wordWrap: true, style: { head: [], border: [] } });
  for (const c of summary.checks) {
    const detail = c.ok ? c.detail : `${c.detail}\n${c.violations.slice(0, 5).join('\n')}`;
    checks.push([`(${c.id}) ${c.name}`, c.ok ? pc.green('PASS') : pc.red('FAIL'), detail]);
  }
  const s = summary.stats;
  const stats = new Table({ head: ['run', 'value'], style: { head: [], border: [] } });
  stats.push(
    ['database / workers / lease', `${summary.kind} / ${summary.workers} / ${summary.leaseS} s (tick ≤ ${summary.tickMaxMs} ms)`],
    ...(summary.group ? [['group mode', `${summary.group} namespaces${summary.balance ? ', balanced' : ''}; stale writes per namespace: ${Object.values(s.staleWritesByNamespace ?? {}).every((n) => n === 0) ? 'none' : JSON.stringify(s.staleWritesByNamespace)}`]] : []),
    ['duration / seed', `${summary.durationS} s / ${summary.seed}`],
    ['faults', `${s.faults}: ${Object.entries(s.faultCounts).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}`],
    ['terms granted / history rows (handed-over, expired)', `${s.grants} / ${s.historyRows ?? '-'} (${s.handOvers ?? '-'}, ${s.expiredTerms ?? '-'})`],
    ['priorities (slot: priority, ineligible)', (summary.settings ?? []).map((x) => `w${x.slot}: ${x.eligible ? x.priority : 'ineligible'}`).join(', ')],
    ['fenced writes committed', `${s.writes} (${s.lateWrites} after lease end while holding the fence)`],
    ['actions started / fenced off (stale writes rejected) / failed', `${s.actions} / ${s.fenced} / ${s.actionErrors}`],
    ['elector tick errors / demotions / same-term re-elections', `${s.tickErrors} / ${s.demotions} / ${s.sameTermReelections}`],
    ['stalls injected into fenced actions', String(s.stalls)],
    ['stalls inside the fence committed / before it fenced off; writes fenced off', `${s.stallsInFenceCommitted ?? 0} / ${s.stallsBeforeFenceFenced ?? 0}; ${s.fenced}`],
    ['longest time without a leader (with no fault nearby)', `${s.maxGapMs} ms (${s.maxQuietGapMs} ms)`],
    ...(s.claims === undefined ? [] : [['schedule: claims (re-claims) / slots done / job rows', `${s.claims} (${s.reclaims}) / ${s.doneSlots} / ${s.jobRows}`]]),
    ['output', `${summary.outDir} (timeline.svg, summary.json, workers/*.jsonl)`],
  );
  process.stdout.write(`${stats.toString()}\n${checks.toString()}\n${summary.ok ? pc.green('chaos: PASS') : pc.red('chaos: FAIL')}\n`);
}

module.exports = { printSummary };
