// The report page: one self-contained HTML document (inline CSS, inline SVG charts, no script
// unless served live), so it opens from disk with no network and can be mailed or archived.
import type { MetricGroup } from './charts.js';
import { runColor } from './charts.js';
import type { RunData } from './load.js';
import { otherLogs, type GroupView, type ImageView, type RolloutBrowser, type ToolCallView, type TrajectoryView, type TransitionView } from './rollouts.js';

export interface ReportModel {
  runs: RunData[];
  groups: MetricGroup[];
  /** SVG per metric key. */
  charts: Map<string, string>;
  /** Rollout browser per run (same order as `runs`); null for runs without rollouts. */
  rollouts: Array<RolloutBrowser | null>;
  generatedAt: Date;
  /** Served by `--serve`: the page refetches itself every `refreshSeconds`. */
  live?: { refreshSeconds: number };
  /** Shown above everything (e.g. a served run that has no metrics yet). */
  notice?: string;
  /** The results tables of the sweeps among the targets (report/sweep.ts), rendered. */
  sweepSection?: string;
  /** Where each run's steps spent their time (report/timing.ts), rendered. */
  timingSection?: string;
  /** The True-Thinking Score results of `cookbook tts` runs (report/tts.ts), rendered. */
  ttsSection?: string;
  /** Scores of the scheduled evals over the checkpoints' steps (report/scheduled-evals.ts), rendered. */
  scheduledEvalsSection?: string;
}

export const esc = (s: unknown) =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function fmt(x: unknown): string {
  if (typeof x !== 'number') return x === null || x === undefined ? '–' : String(x);
  if (Number.isNaN(x)) return 'NaN';
  if (Number.isInteger(x) || !Number.isFinite(x)) return String(x);
  return String(Number(x.toPrecision(5)));
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

const slug = (s: string) => s.replace(/[^A-Za-z0-9_-]+/g, '-');

const CSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#fff;border-bottom:1px solid #ddd;padding:12px 24px}
header h1{font-size:18px;margin:0 0 4px}
nav a{margin-right:12px;color:#335;font-size:13px}
main{padding:8px 24px 48px}
h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:14px;margin:18px 0 6px;color:#444}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:10px}
figure{margin:0;background:#fff;border:1px solid #e4e4e4;border-radius:4px;padding:6px;overflow:hidden}
figure svg{max-width:100%;height:auto}
table{border-collapse:collapse;background:#fff;font-size:13px;margin:4px 0 12px}
th,td{border:1px solid #e0e0e0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#fff;border:1px solid #e4e4e4;padding:8px;white-space:pre-wrap;word-break:break-word;margin:4px 0;font-size:12.5px}
pre.ob{background:#f6f8fb}.ob-images{display:flex;flex-wrap:wrap;gap:8px}.ob-image{margin:4px 0}.ob-image img{max-width:256px;max-height:256px;image-rendering:pixelated;border:1px solid #ddd}pre.ac{background:#f4fbf4}
.tool-call{margin:4px 0 6px 18px;padding-left:8px;border-left:3px solid #b9a6e0}
pre.tool-call-text{background:#fbf7ec}pre.tool-result{background:#f6f2fc}pre.tool-result.bad{background:#fdf0f0}
details{margin:3px 0 3px 0}details details{margin-left:18px}
summary{cursor:pointer}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:baseline}
.muted{color:#777}.notice{background:#fff6d6;border:1px solid #e8d48a;padding:8px 12px;margin:12px 0}
.kv{font-size:12.5px;color:#444}.kv b{font-weight:600}
.bad{color:#b03030}
.legend-item{margin-right:10px;white-space:nowrap}
`;

/** Reloads the report in place: open <details> and the scroll position survive each refresh. */
const liveScript = (seconds: number) => `
(() => {
  const refresh = async () => {
    try {
      const res = await fetch(location.href, { cache: 'no-store' });
      if (res.ok) {
        const next = new DOMParser().parseFromString(await res.text(), 'text/html');
        const open = [...document.querySelectorAll('details[open][id]')].map((d) => d.id);
        const [x, y] = [scrollX, scrollY];
        for (const id of ['status', 'nav', 'content']) document.getElementById(id).replaceWith(document.adoptNode(next.getElementById(id)));
        for (const id of open) { const d = document.getElementById(id); if (d) d.open = true; }
        scrollTo(x, y);
        const root = document.documentElement;
        root.dataset.refreshes = String(Number(root.dataset.refreshes || 0) + 1);
      }
    } catch (err) {
      // The server is gone (the command was stopped): keep showing the last report.
    }
    setTimeout(refresh, ${seconds * 1000});
  };
  setTimeout(refresh, ${seconds * 1000});
})();`;

function kv(obj: Record<string, unknown>): string {
  const entries = Object.entries(obj);
  return entries.length ? `<div class="kv">${entries.map(([k, v]) => `<b>${esc(k)}</b> ${esc(fmt(v))}`).join(' · ')}</div>` : '';
}

export function table(headers: string[], rows: unknown[][]): string {
  const cell = (v: unknown) => (typeof v === 'number' ? `<td class="num">${esc(fmt(v))}</td>` : `<td>${esc(fmt(v))}</td>`);
  return `<table><thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map(cell).join('')}</tr>`).join('')}</tbody></table>`;
}

function runsTable(runs: RunData[]): string {
  const rows = runs.map((run, i) => {
    const steps = run.metrics.map((r) => r.step as number);
    const last = run.checkpoints[run.checkpoints.length - 1];
    return `<tr><td><span class="swatch" style="background:${runColor(i)}"></span>${esc(run.label)}</td><td>${esc(run.kind ?? '–')}</td><td>${esc(run.config?.model_name ?? run.config?.model ?? '–')}</td><td class="num">${steps.length ? `${Math.min(...steps)}–${Math.max(...steps)}` : '–'}</td><td>${esc(last?.name ?? '–')}</td><td>${esc(run.logDir)}</td></tr>`;
  });
  return `<table><thead><tr><th>run</th><th>kind</th><th>model</th><th>steps</th><th>last checkpoint</th><th>log dir</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function metricsSection(m: ReportModel): string {
  // A TTS run (report/tts.ts) has results but no training metrics to plot.
  if (m.groups.length === 0) return m.ttsSection ? '' : '<h2 id="metrics">Metrics</h2><p class="muted">no numeric metrics yet</p>';
  const sections = m.groups.map(
    (g) =>
      `<section class="metric-group" id="metrics-${slug(g.name)}" data-group="${esc(g.name)}"><h3>${esc(g.name)} <span class="muted">(${g.keys.length})</span></h3><div class="charts">${g.keys
        .map((k) => `<figure class="chart" data-key="${esc(k)}">${m.charts.get(k) ?? ''}</figure>`)
        .join('')}</div></section>`,
  );
  return `<h2 id="metrics">Metrics</h2>${sections.join('')}`;
}

function configSection(runs: RunData[]): string {
  const parts = runs.map(
    (run, i) =>
      `<details id="config-${i}"${runs.length === 1 ? ' open' : ''}><summary>${esc(run.label)}</summary><pre>${esc(run.config ? JSON.stringify(run.config, null, 2) : 'no config.json')}</pre></details>`,
  );
  return `<h2 id="config">Config</h2>${parts.join('')}`;
}

function checkpointsSection(runs: RunData[]): string {
  const parts = runs.map((run) => {
    if (run.checkpoints.length === 0) return `<h3>${esc(run.label)}</h3><p class="muted">no checkpoints yet</p>`;
    const keys: string[] = [];
    for (const row of run.checkpoints) for (const k of Object.keys(row)) if (!keys.includes(k)) keys.push(k);
    const failovers = run.failovers.length
      ? `<p class="notice">Training moved to another backend ${run.failovers.length === 1 ? 'once' : `${run.failovers.length} times`}:</p>${table(
          ['from step', 'from backend', 'to backend', 'restored checkpoint', 'why'],
          run.failovers.map((f) => [f.step, f.from ?? 'the worker’s default', f.to, f.checkpoint ?? 'none (restarted)', f.reason]),
        )}`
      : '';
    return `<h3>${esc(run.label)}</h3>${table(keys, run.checkpoints.map((row) => keys.map((k) => row[k])))}${failovers}`;
  });
  return `<h2 id="checkpoints">Checkpoints</h2>${parts.join('')}`;
}

/** A tool call the env parsed from the sampled text and dispatched, and the tool message it got back. */
function toolCallHtml(c: ToolCallView): string {
  const result =
    c.result === null
      ? '<div class="muted">no result logged</div>'
      : `<div class="muted">tool result ${c.index}${c.error ? ' · <span class="bad">error</span>' : ''}</div><pre class="tool-result${c.error ? ' bad' : ''}">${esc(c.result)}</pre>`;
  return `<div class="tool-call" data-index="${c.index}"><div class="muted">tool call ${c.index}</div><pre class="tool-call-text">${esc(c.call)}</pre>${result}</div>`;
}

function imagesHtml(images: ImageView[]): string {
  if (!images.length) return '';
  const one = (im: ImageView, i: number) =>
    `<figure class="ob-image"><figcaption class="muted">image ${i + 1} · ${im.tokens} tokens</figcaption>${
      im.src ? `<img src="${esc(im.src)}" alt="image ${i + 1} of the observation">` : '<div class="muted">(not embedded: the report\'s image budget is spent)</div>'
    }</figure>`;
  return `<div class="ob-images">${images.map(one).join('')}</div>`;
}

function transitionHtml(t: TransitionView, i: number, count: number): string {
  const turn = count > 1 ? `turn ${i} · ` : '';
  const calls = t.toolCalls.length ? ` · ${plural(t.toolCalls.length, 'tool call')}` : '';
  return `<div class="transition">
<div class="muted">${turn}${t.obIsContinuation ? 'new observation tokens' : 'prompt'} (${t.obTokens} tokens in the observation)</div>${imagesHtml(t.images)}<pre class="ob">${esc(t.ob)}</pre>
<div class="muted">sampled (${t.acTokens} tokens, stop: ${esc(t.stopReason)}) · reward ${esc(fmt(t.reward))}${calls}${t.episodeDone ? ' · episode done' : ''}</div><pre class="ac">${esc(t.ac)}</pre>
${t.toolCalls.map(toolCallHtml).join('')}${kv(t.metrics)}${kv(otherLogs(t.logs))}</div>`;
}

const toolCallCount = (t: TrajectoryView) => t.transitions.reduce((n, x) => n + x.toolCalls.length, 0);

function trajectoryHtml(t: TrajectoryView, id: string): string {
  const tokens = t.transitions.reduce((n, x) => n + x.acTokens, 0);
  const calls = toolCallCount(t);
  return `<details id="${id}" class="trajectory"><summary>#${t.index} · reward ${esc(fmt(t.totalReward))} · advantage ${esc(fmt(t.advantage))} · ${tokens} sampled tokens${calls ? ` · ${plural(calls, 'tool call')}` : ''}</summary>
${kv({ final_reward: t.finalReward, ...t.metrics })}${t.transitions.map((x, i) => transitionHtml(x, i, t.transitions.length)).join('')}</details>`;
}

function groupHtml(g: GroupView, id: string): string {
  const stale = g.samplingStep !== null ? ` · sampled at step ${g.samplingStep}` : '';
  const tags = g.tags.length ? ` · ${esc(g.tags.join(', '))}` : '';
  const dropped = g.trained ? '' : ' · <span class="bad">not trained (constant reward)</span>';
  const errors = g.errors.length ? `<div class="bad">rollout errors: ${esc(g.errors.map((e) => e.errorType).join(', '))}</div>` : '';
  // A tool-calls column where the group's trajectories called any tool (agent envs).
  const withCalls = g.trajectories.some((t) => toolCallCount(t) > 0);
  const rows = g.trajectories.map((t) => [
    t.index,
    t.totalReward,
    t.advantage,
    t.transitions.reduce((n, x) => n + x.acTokens, 0),
    ...(withCalls ? [toolCallCount(t)] : []),
    t.transitions.at(-1)?.stopReason ?? '–',
  ]);
  const headers = ['trajectory', 'reward', 'advantage', 'sampled tokens', ...(withCalls ? ['tool calls'] : []), 'stop'];
  return `<details id="${id}" class="group"><summary>group ${g.group} (batch ${g.batch})${stale}${tags} · mean reward ${esc(fmt(g.meanReward))}${dropped}</summary>
${errors}${table(headers, rows)}${g.trajectories.map((t) => trajectoryHtml(t, `${id}-t${t.index}`)).join('')}</details>`;
}

function rolloutsSection(m: ReportModel): string {
  const parts = m.runs.flatMap((run, r) => {
    const b = m.rollouts[r];
    if (!b) return [];
    const sample = b.iterations.length < b.totalIterations ? `<p class="muted">showing ${b.iterations.length} of ${b.totalIterations} iterations, evenly spaced (--rollout-iterations)</p>` : '';
    const note = b.tokenizerNote ? `<p class="notice">${esc(b.tokenizerNote)}</p>` : '';
    const source = b.source === 'blobs' ? '<p class="muted">read from the rollout blobs (run without rollout records): advantages recomputed</p>' : '';
    const iterations = b.iterations.map((it) => {
      const id = `ro-${r}-${it.step}`;
      const n = it.groups.reduce((k, g) => k + g.trajectories.length, 0);
      const calls = it.groups.reduce((k, g) => k + g.trajectories.reduce((c, t) => c + toolCallCount(t), 0), 0);
      return `<details id="${id}" class="iteration" data-step="${it.step}"><summary>iteration ${it.step} · ${plural(it.groups.length, 'group')} · ${plural(n, 'trajectory', 'trajectories')} · mean reward ${esc(fmt(it.meanReward))}${calls ? ` · ${plural(calls, 'tool call')}` : ''}</summary>${it.groups.map((g) => groupHtml(g, `${id}-g${g.group}`)).join('')}</details>`;
    });
    return [`<h3>${esc(run.label)}</h3>${note}${source}${sample}${iterations.join('')}`];
  });
  return parts.length ? `<h2 id="rollouts">Rollouts</h2>${parts.join('')}` : '';
}

export function renderHtml(m: ReportModel): string {
  const title = `cookbook report: ${m.runs.map((r) => r.label).join(', ') || 'no runs'}`;
  const hasRollouts = m.rollouts.some(Boolean);
  const nav = [
    ...(m.sweepSection ? ['<a href="#sweep">sweep results</a>'] : []),
    ...m.groups.map((g) => `<a href="#metrics-${slug(g.name)}">${esc(g.name)}</a>`),
    ...(m.timingSection ? ['<a href="#timing">timing</a>'] : []),
    ...(m.ttsSection ? ['<a href="#tts">true-thinking score</a>'] : []),
    ...(m.scheduledEvalsSection ? ['<a href="#scheduled-evals">scheduled evals</a>'] : []),
    '<a href="#config">config</a>',
    '<a href="#checkpoints">checkpoints</a>',
    ...(hasRollouts ? ['<a href="#rollouts">rollouts</a>'] : []),
  ].join('');
  const status = `<div id="status" class="muted">generated ${esc(m.generatedAt.toISOString().replace('T', ' ').slice(0, 19))} UTC${m.live ? ` · live, refreshing every ${m.live.refreshSeconds}s` : ''}</div>`;
  const notice = m.notice ? `<div class="notice">${esc(m.notice)}</div>` : '';
  const content = m.runs.length
    ? `<div id="content">${notice}${m.sweepSection ?? ''}${runsTable(m.runs)}${m.ttsSection ?? ''}${metricsSection(m)}${m.scheduledEvalsSection ?? ''}${m.timingSection ?? ''}${configSection(m.runs)}${checkpointsSection(m.runs)}${rolloutsSection(m)}</div>`
    : `<div id="content">${notice}</div>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${CSS}</style></head>
<body><header><h1>${esc(title)}</h1>${status}<nav id="nav">${nav}</nav></header>
<main>${content}</main>${m.live ? `<script>${liveScript(m.live.refreshSeconds)}</script>` : ''}</body></html>
`;
}
