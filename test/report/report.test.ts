// `cookbook report` on fixture log dirs: charts per key, grouped sections, overlay legends,
// decoded rollouts, the live server, and the errors a user can meet.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunStore } from '../../src/cookbook/run-store.js';
import { metricGroups } from '../../src/report/charts.js';
import { loadRuns, ReportError } from '../../src/report/load.js';
import { buildReportHtml, writeReport } from '../../src/report/report.js';
import { ImageBudget, loadRollouts, spread, toolCallsOf } from '../../src/report/rollouts.js';
import { serveReport } from '../../src/report/serve.js';
import { ANSWERS, imageRun, PROMPT_TEXT, RL_KEYS, rlRun, SL_KEYS, slRun, tempDir, TOOL_CALL, TOOL_ERROR, TOOL_RESULT, toolRun } from './fixture.js';

const bin = join(import.meta.dirname, '..', '..', 'bin', 'cookbook.mjs');
const cookbook = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });

/** The figure of each chart: `data-key` → its markup. */
function figures(html: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of html.matchAll(/<figure class="chart" data-key="([^"]+)">([\s\S]*?)<\/figure>/g)) out.set(m[1], m[2]);
  return out;
}
const sectionOrder = (html: string) => [...html.matchAll(/<section class="metric-group" id="[^"]+" data-group="([^"]+)"/g)].map((m) => m[1]);
const escaped = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

describe('cookbook report: page', () => {
  it('draws one chart per numeric key, grouped by prefix, both runs overlaid with a legend', async () => {
    const a = slRun(tempDir(), 'sl-a');
    const b = slRun(tempDir(), 'sl-b', 6, 1.5);
    const html = await buildReportHtml([a, b]);
    const charts = figures(html);
    expect([...charts.keys()].sort()).toEqual([...SL_KEYS].sort());
    expect(sectionOrder(html)).toEqual(['train', 'test', 'time']);
    for (const [key, svg] of charts) {
      expect(svg, key).toMatch(/^<svg[^>]*class="marks"/);
      expect(svg, key).toMatch(/<path[^>]* d="M[^"]+"/); // the line itself
      // The legend names both runs in every chart (also for test/nll, logged every other step).
      expect(svg, key).toContain('>sl-a</text>');
      expect(svg, key).toContain('>sl-b</text>');
    }
    expect(html).toContain('<h2 id="config">');
    expect(html).toContain('&quot;model_name&quot;: &quot;tiny-qwen3&quot;');
    expect(html).toContain('tinker://sl-b/sampler_weights/final');
    // Self-contained: nothing to fetch, no script in a written report.
    expect(html).not.toMatch(/<script|<link|\ssrc=|@import|url\(http/);
    // Ids of every inlined SVG are unique (clip paths of one chart must not clip another).
    const ids = [...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a single run has no legend, an RL run gets the env/ and optim/ sections and the rollout browser', async () => {
    const rl = await rlRun(tempDir());
    const html = await buildReportHtml([rl]);
    expect([...figures(html).keys()].sort()).toEqual([...RL_KEYS].sort());
    expect(sectionOrder(html)).toEqual(['train', 'env', 'optim', 'time']);
    expect(figures(html).get('env/all/reward/total')).not.toContain('>rl-fixture</text>');

    expect(html).toContain('<h2 id="rollouts">');
    expect(html.match(/<details id="ro-0-\d+" class="iteration"/g)).toHaveLength(3);
    // Decoded with tiny-qwen3's tokenizer, chat-template markers kept (and escaped).
    expect(html).toContain(escaped(`<|im_start|>user\n${PROMPT_TEXT}<|im_end|>\n<|im_start|>assistant\n`));
    expect(html).toContain(escaped(`${ANSWERS[0]}<|im_end|>`));
    expect(html).toContain(escaped(`${ANSWERS[1]}<|im_end|>`));
    expect(html).toContain('#0 · reward 1 · advantage 0.5');
    expect(html).toContain('#1 · reward 0 · advantage -0.5');
    expect(html).toContain('<b>correct</b> 1');
    expect(html).toContain('sampled at step 2 · arithmetic');
  });

  it('overlays an SL and an RL run: shared keys get both, the others one, all in the same colours', async () => {
    const html = await buildReportHtml([slRun(tempDir(), 'sl-a'), await rlRun(tempDir(), 'rl-b')]);
    const charts = figures(html);
    expect(charts.size).toBe(new Set([...SL_KEYS, ...RL_KEYS]).size);
    expect(sectionOrder(html)).toEqual(['train', 'test', 'env', 'optim', 'time']);
    const lr = charts.get('learning_rate')!;
    expect(lr).toContain('#4c78a8');
    expect(lr).toContain('#f58518');
  });
});

describe('cookbook report: rollouts', () => {
  it('falls back to the rollout blobs of a run without records, advantages recomputed', async () => {
    const dir = await rlRun(tempDir());
    const withRecords = (await loadRollouts(loadRuns(dir)[0]))!;
    rmSync(join(dir, '.cookbook', 'store', 'rollout_records'), { recursive: true });
    const fromBlobs = (await loadRollouts(loadRuns(dir)[0]))!;
    expect(withRecords.source).toBe('records');
    expect(fromBlobs.source).toBe('blobs');
    expect(fromBlobs.iterations.map((i) => i.step)).toEqual([0, 1, 2]);
    const adv = (b: typeof fromBlobs) => b.iterations.flatMap((i) => i.groups.flatMap((g) => g.trajectories.map((t) => t.advantage)));
    expect(adv(fromBlobs)).toEqual(adv(withRecords));
  });

  it('shows an even spread of iterations with the first and the last when there are many', async () => {
    expect(spread([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 4)).toEqual([0, 3, 6, 9]);
    expect(spread([0, 1, 2], 5)).toEqual([0, 1, 2]);
    const html = await buildReportHtml([await rlRun(tempDir(), 'rl', 5)], { rolloutIterations: 2 });
    expect([...html.matchAll(/class="iteration" data-step="(\d+)"/g)].map((m) => m[1])).toEqual(['0', '4']);
    expect(html).toContain('showing 2 of 5 iterations');
  });

  it("an agent env's tool calls and results: each its own block under the sampled turn, errors marked, counted per trajectory, group and iteration", async () => {
    expect(toolCallsOf({ assistant_content: 'x', tool_result_1: 'r1', tool_call_1: 'b()', tool_call_0: 'a()', tool_result_0: TOOL_ERROR, tool_call_2: 'c()' })).toEqual([
      { index: 0, call: 'a()', result: TOOL_ERROR, error: true },
      { index: 1, call: 'b()', result: 'r1', error: false },
      { index: 2, call: 'c()', result: null, error: false },
    ]);
    // A result that merely starts like an error object is not one.
    expect(toolCallsOf({ tool_call_0: 'a()', tool_result_0: '{"error": 1, "rows": []}' })[0].error).toBe(false);

    const dir = await toolRun(tempDir());
    const b = (await loadRollouts(loadRuns(dir)[0]))!;
    const [ok, bad] = b.iterations[0].groups[0].trajectories;
    expect(ok.transitions[0].toolCalls).toEqual([{ index: 0, call: TOOL_CALL, result: TOOL_RESULT, error: false }]);
    expect(bad.transitions[0].toolCalls[0].error).toBe(true);
    expect(ok.transitions[1].toolCalls).toEqual([]);

    const html = await buildReportHtml([dir]);
    const blocks = [...html.matchAll(/<div class="tool-call" data-index="(\d+)">([\s\S]*?)<\/div><\/div>/g)];
    expect(blocks).toHaveLength(2);
    expect(blocks[0][2]).toContain(`<div class="muted">tool call 0</div><pre class="tool-call-text">${escaped(TOOL_CALL).replace(/"/g, '&quot;')}</pre>`);
    expect(blocks[0][2]).toContain(`<div class="muted">tool result 0</div><pre class="tool-result">${escaped(TOOL_RESULT).replace(/"/g, '&quot;')}</pre>`);
    expect(blocks[1][2]).toContain('tool result 0 · <span class="bad">error</span></div><pre class="tool-result bad">');
    expect(blocks[1][2]).toContain(escaped(TOOL_ERROR).replace(/"/g, '&quot;').replace(/'/g, '&#39;'));
    // The calls and results are not repeated among the other logs; those stay.
    expect(html).not.toContain('<b>tool_call_0</b>');
    expect(html).not.toContain('<b>tool_result_0</b>');
    expect(html).toContain('<b>assistant_content</b> Answer: Nairobi');
    // The sampled call, and its result in the next observation (what the policy saw), stay as they were.
    expect(html).toContain(escaped('<tool_call>\n{"name": "search"').replace(/"/g, '&quot;'));
    expect(html).toContain('new observation tokens');
    expect(html).toContain(escaped('<tool_response>\nQuery: capital of Kenya'));
    // Counts: the turn, the trajectory, the group's table (a column only for groups with calls) and the iteration.
    expect(html).toContain('reward 0 · 1 tool call</div>');
    expect(html).toMatch(/#0 · reward 1 · advantage 0\.5 · \d+ sampled tokens · 1 tool call<\/summary>/);
    expect(html).toContain('<th>sampled tokens</th><th>tool calls</th><th>stop</th>');
    expect(html).toMatch(/class="iteration" data-step="0"><summary>iteration 0 · 1 group · 2 trajectories · mean reward 0\.5 · 2 tool calls<\/summary>/);
    // A run without tool calls gets no such column or counts.
    const plain = await buildReportHtml([await rlRun(tempDir())]);
    expect(plain).not.toContain('tool call');
  });

  it("a vision env's observation: its image shown where it sits, with its token count; past the budget, a placeholder", async () => {
    const dir = await imageRun(tempDir());
    const b = (await loadRollouts(loadRuns(dir)[0]))!;
    const t = b.iterations[0].groups[0].trajectories[0].transitions[0];
    expect(t.ob).toContain('<|vision_start|>[image 1]<|vision_end|>Which shape is this');
    expect(t.images).toHaveLength(1);
    expect(t.images[0].tokens).toBe(4);
    expect(t.images[0].src).toMatch(/^data:image\/jpeg;base64,\/9j\//);
    const html = await buildReportHtml([dir]);
    expect(html).toContain(`<figcaption class="muted">image 1 · 4 tokens</figcaption><img src="${t.images[0].src}"`);
    const chunk = { type: 'image' as const, data: 'A'.repeat(400), format: 'jpeg' as const, expected_tokens: 4 };
    const budget = new ImageBudget(300);
    expect(budget.views({ chunks: [chunk, chunk] }).map((v) => v.src !== null)).toEqual([true, false]);
  });

  it('shows token ids when the model has no tokenizer', async () => {
    const dir = await rlRun(tempDir());
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, model_name: 'acme/unknown-model' }));
    const b = (await loadRollouts(loadRuns(dir)[0]))!;
    expect(b.tokenizerNote).toMatch(/no tokenizer for acme\/unknown-model/);
    expect(b.iterations[0].groups[0].trajectories[0].transitions[0].ac).toMatch(/^\[\d+(, \d+)*\]$/);
  });
});

describe('cookbook report: runs and errors', () => {
  it('writes report.html into the first run\'s log dir, or to --out', async () => {
    const a = slRun(tempDir(), 'sl-a');
    const b = slRun(tempDir(), 'sl-b');
    expect(await writeReport([a, b])).toBe(join(a, 'report.html'));
    expect(readFileSync(join(a, 'report.html'), 'utf8')).toContain('cookbook report: sl-a, sl-b');
    const out = join(tempDir(), 'cmp.html');
    expect(await writeReport([b], { out })).toBe(out);
    expect(existsSync(join(b, 'report.html'))).toBe(false);
  });

  it('expands a pipeline log dir into its stages', async () => {
    const root = tempDir();
    new RunStore(root).init({ workflowId: 'pipe', kind: 'pipeline', config: {} }, new Set());
    slRun(join(root, '0-sl'), 'pipe/0-sl');
    await rlRun(join(root, '1-rl'), 'pipe/1-rl');
    expect(loadRuns(root).map((r) => r.label)).toEqual(['pipe/0-sl', 'pipe/1-rl']);
  });

  it('resolves a workflow id through the lookup, and says clearly what is wrong', async () => {
    const dir = slRun(tempDir(), 'sl-a');
    const lookup = async (id: string) => {
      if (id === 'sl-a') return dir;
      throw new Error(`no run with workflow id "${id}" (see \`npx cookbook runs\`)`);
    };
    expect(await writeReport(['sl-a'], { lookup })).toBe(join(dir, 'report.html'));
    await expect(writeReport(['sl-zzz'], { lookup })).rejects.toThrow(/no run with workflow id "sl-zzz"/);
    await expect(writeReport(['./no/such/dir'])).rejects.toThrow(/no log dir at .*no\/such\/dir/);
    await expect(writeReport(['some-id'])).rejects.toThrow(/not a log dir, and no Temporal server/);
    await expect(writeReport([tempDir()])).rejects.toThrow(/is not a run's log dir/);
    await expect(writeReport([])).rejects.toThrow(ReportError);
    const moved = async () => join(tempDir(), 'gone');
    await expect(writeReport(['sl-a'], { lookup: moved })).rejects.toThrow(/which is not on this machine/);

    const empty = tempDir();
    new RunStore(empty).init({ workflowId: 'fresh', kind: 'sl', config: { model_name: 'tiny-qwen3' } }, new Set());
    await expect(writeReport([empty])).rejects.toThrow(/run fresh has no metrics yet: .*metrics\.jsonl is missing or empty/);
  });

  it('the CLI writes the file, and exits 1 with a one-line error for a missing log dir', () => {
    const dir = slRun(tempDir(), 'sl-cli');
    const ok = cookbook('report', dir);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout.trim()).toBe(`wrote ${join(dir, 'report.html')}`);
    const bad = cookbook('report', join(dir, 'nope'));
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim()).toBe(`error: no log dir at ${join(dir, 'nope')}`);
    const usage = cookbook('report', dir, '--port', '80');
    expect(usage.status).toBe(2);
    expect(usage.stderr).toMatch(/--port goes with --serve/);
  });
});

describe('cookbook report --serve', () => {
  it('serves a live page that follows the run: new steps appear on the next request', async () => {
    const dir = tempDir();
    const store = new RunStore(dir);
    store.init({ workflowId: 'live', kind: 'sl', config: { model_name: 'tiny-qwen3' } }, new Set());
    const server = await serveReport([dir], { refreshSeconds: 2 });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      // Before the first step: a page that says so (and keeps refreshing), not an error.
      let res = await fetch(server.url);
      expect(res.status).toBe(200);
      let html = await res.text();
      expect(html).toContain('run live has no metrics yet');
      expect(html).toContain('<script>');
      expect(html).toContain('setTimeout(refresh, 2000)');

      store.writeMetrics({ step: 0, train_mean_nll: 2.5 });
      store.writeMetrics({ step: 1, train_mean_nll: 2.1 });
      html = await (await fetch(server.url)).text();
      expect(html).not.toContain('no metrics yet');
      expect([...figures(html).keys()]).toEqual(['train_mean_nll']);
      expect((await fetch(new URL('/elsewhere', server.url))).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
