/** The page's stylesheet (served as `style.css`: the policy allows no inline style). */
export const PAGE_CSS = `
:root {
  --ink: #1d2430; --muted: #6b7280; --line: #e3e6eb; --bg: #f6f7f9; --card: #fff; --accent: #2457c5;
  --current: #2e9d4f; --handed-over: #2f6fd6; --resigned: #8a4fc7; --unregistered: #0f8f95; --expired: #e0632a; --operator: #a16207;
  --bad: #c62828; --warn: #d9822b; --flap: #8e24aa; --ok: #2e7d32;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
  color: var(--ink); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code { font: 12.5px/1.3 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.bar { display: flex; align-items: center; gap: 16px; padding: 10px 20px; background: #17202e; color: #e8ecf2; }
.bar a { color: #fff; }
.brand { font-weight: 650; letter-spacing: .2px; }
.crumbs { flex: 1; color: #aeb7c4; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.crumbs a { color: #cfd8e6; }
.live { font-size: 12px; padding: 2px 10px 2px 22px; border-radius: 12px; position: relative; background: #2a3546; }
.live::before { content: ""; position: absolute; left: 9px; top: 7px; width: 8px; height: 8px; border-radius: 50%; background: #9aa5b5; }
.live[data-state="live"]::before { background: #35c46a; box-shadow: 0 0 0 3px rgba(53,196,106,.25); }
.live[data-state="reconnecting"] { background: #5a3b12; }
.live[data-state="reconnecting"]::before { background: #f0a53a; }
.problem { margin: 0; padding: 8px 20px; background: #fdecea; color: #8a1c1c; border-bottom: 1px solid #f5c6c2; white-space: pre-wrap; overflow-wrap: anywhere; }
main { padding: 16px 20px 40px; max-width: 1400px; margin: 0 auto; }
.muted { color: var(--muted); }
.note { color: #7a5b00; background: #fff8e1; padding: 6px 10px; border-radius: 4px; }
.empty { color: var(--muted); padding: 20px 0; }
.controls { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-bottom: 10px; }
.controls input, .controls select, .controls button, .card-head select { font: inherit; padding: 5px 8px; border: 1px solid #cfd4dc; border-radius: 5px; background: #fff; color: var(--ink); }
.controls .filter { min-width: 260px; flex: 0 1 340px; }
.controls button { cursor: pointer; }
.tabs { display: inline-flex; border: 1px solid #cfd4dc; border-radius: 5px; overflow: hidden; }
.tab { padding: 5px 12px; color: var(--ink); background: #fff; }
.tab.active { background: var(--accent); color: #fff; }
.tab:hover { text-decoration: none; }
.summary { margin: 4px 0 10px; color: var(--muted); }
.bad-text { color: var(--bad); font-weight: 600; }
.flap-text { color: var(--flap); font-weight: 600; }
.grid { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line); border-radius: 6px; }
.grid th { text-align: left; font-weight: 600; font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .4px; padding: 8px 10px; border-bottom: 1px solid var(--line); background: #fafbfc; }
.grid td { padding: 6px 10px; border-bottom: 1px solid #eef0f3; vertical-align: top; overflow-wrap: anywhere; }
.grid tr:last-child td { border-bottom: 0; }
.grid .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.grid td.ns { max-width: 360px; }
.where { margin-left: 8px; color: var(--muted); }
.badges { display: inline-flex; gap: 4px; flex-wrap: wrap; }
.badge { display: inline-block; font-size: 11.5px; line-height: 18px; padding: 0 7px; border-radius: 9px; font-weight: 600; margin-left: 4px; }
.badges .badge { margin-left: 0; }
.badge.ok { background: #e4f4e6; color: var(--ok); }
.badge.bad { background: #fde4e4; color: var(--bad); }
.badge.warn { background: #fdefdc; color: #a35a0c; }
.badge.flap { background: #f3e3f7; color: var(--flap); }
.lease { display: inline-flex; align-items: center; gap: 8px; white-space: nowrap; font-variant-numeric: tabular-nums; }
.meter { display: inline-block; width: 70px; height: 6px; border-radius: 3px; background: #e8ebef; overflow: hidden; }
.meter .fill { display: block; height: 100%; background: var(--current); }
.meter .fill.warn { background: var(--warn); }
.pager { display: flex; gap: 16px; align-items: center; justify-content: center; margin-top: 12px; color: var(--muted); }
.ns-head { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
.ns-head h1 { font-size: 22px; margin: 4px 0 12px; overflow-wrap: anywhere; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin-bottom: 14px; }
.card h2 { font-size: 15px; margin: 0 0 8px; }
.card h3 { font-size: 13px; margin: 12px 0 4px; color: var(--muted); }
.card .grid { border: 0; }
.card-head { display: flex; align-items: center; justify-content: space-between; margin-bottom: 8px; }
.card-head h2 { margin: 0; }
.leader-id { font-size: 16px; margin: 0 0 8px; }
.leader-id code { font-size: 15px; }
.vacant-text { font-size: 16px; color: var(--bad); font-weight: 600; margin: 0 0 4px; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 0 10px; margin: 0; font-size: 12.5px; }
.meta dt { color: var(--muted); overflow-wrap: anywhere; }
.meta dd { margin: 0; overflow-wrap: anywhere; }
tr.is-leader td { background: #f3faf4; }
.timeline { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
.card .timeline { border: 0; padding: 4px 0; }
.lane { display: flex; align-items: center; gap: 10px; height: 20px; }
.timeline.single .lane { height: 30px; }
.lane-label { flex: 0 0 210px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-size: 12.5px; }
.track { position: relative; flex: 1; height: 14px; background: #f1f3f6; border-radius: 3px; overflow: hidden; }
.timeline.single .track { height: 24px; }
.axis-lane { height: 18px; }
.axis { position: relative; flex: 1; height: 16px; border-bottom: 1px solid var(--line); }
.tick { position: absolute; top: 0; transform: translateX(-50%); font-size: 11px; color: var(--muted); white-space: nowrap; }
.seg { position: absolute; top: 0; bottom: 0; min-width: 2px; border-right: 1px solid rgba(255,255,255,.7); }
.seg-current { background: var(--current); }
.seg-handed-over { background: var(--handed-over); }
.seg-resigned { background: var(--resigned); }
.seg-unregistered { background: var(--unregistered); }
.seg-expired { background: var(--expired); }
.seg-operator { background: var(--operator); }
.seg-vacant { background: repeating-linear-gradient(135deg, #f4c7c3 0 3px, #fbeaea 3px 7px); border-right: 0; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; margin: 8px 0; font-size: 12px; color: var(--muted); }
.legend .key { display: inline-flex; align-items: center; gap: 5px; }
.swatch { position: static; display: inline-block; width: 14px; height: 10px; border-radius: 2px; }
.reason { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.terms { margin-top: 6px; max-height: 420px; overflow: auto; }
`;
