// configs/pipeline_search_tool.json on the real stack: a supervised warm-up on the search_tool
// transcripts (data/search_tool/sft_tool_calls.jsonl), then search_tool RL from its weights. The
// randomly initialised tiny model writes no tool call of its own (rl-search.test.ts); after the
// warm-up its RL rollouts call `search` at the RL temperature, each call is dispatched (the real
// BM25 result, recorded once in the run store), its result is the next observation's
// <tool_response>, and `cookbook report`'s rollout browser shows the call and the result.
// Fuller tier: the warm-up is 160 SFT steps over ~750-token transcripts (15 minutes on an idle
// 2-core machine; 34 with a one-thread engine beside other suites).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { loadSearchCorpus, searchTool } from '../../src/cookbook/rl/envs/search-tool.js';
import { deserializeTrajectoryGroup } from '../../src/cookbook/rl/serialize.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { getTokenizer } from '../../src/cookbook/tokenizer.js';
import { esc } from '../../src/report/html.js';
import { buildReportHtml } from '../../src/report/report.js';
import type { PipelineResult } from '../../src/workflows/pipeline.js';
import { metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const REPO = join(import.meta.dirname, '..', '..');
const CONFIG = join(REPO, 'configs', 'pipeline_search_tool.json');
const RL_STEPS = 4;

describe('search_tool RL after a tool-call warm-up', { timeout: 3_600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('the RL stage calls search, gets the BM25 result in the next observation, records it once, and the report shows both', async () => {
    const run = testRun(stack, CONFIG, [`stages.1.config.max_steps=${RL_STEPS}`, 'stages.1.config.save_every=0', 'stages.1.config.eval_every=0'], 'pipeline');
    const started = Date.now();
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as PipelineResult);
    expect(result.status).toBe('completed');
    expect(result.stages.map((s) => [s.kind, s.result.status])).toEqual([
      ['sl', 'completed'],
      ['rl', 'completed'],
    ]);
    const [slDir, rlDir] = result.stages.map((s) => s.logPath);
    const rlConfig = JSON.parse(readFileSync(join(rlDir, 'config.json'), 'utf8'));
    expect(rlConfig.load_checkpoint_path).toBe(result.stages[0].result.finalCheckpoint!.statePath);
    const nll = metricsOf(slDir).map((r) => r.train_mean_nll as number);

    // Every logged call, checked against the trajectory, the tool and the run store.
    const tok = await getTokenizer('tiny-qwen3');
    const search = searchTool(loadSearchCorpus(join(REPO, 'data/search_tool/corpus.jsonl'), 'corpus.jsonl'));
    const store = new RunStore(rlDir);
    const records = store.readRolloutRecords();
    expect(records.map((r) => r.step)).toEqual([...Array(RL_STEPS).keys()]);
    let episodes = 0;
    let firstTurnCalls = 0;
    const calls: Array<{ call: string; result: string }> = [];
    for (const record of records) {
      for (const g of record.groups) {
        const group = deserializeTrajectoryGroup(store.readBlob(g.ref).toString('utf8'));
        // The group rollout's tool-call records: side_effects/<step>_<group>_<attempt>/tool_episode_*.json.
        const position = g.ref.match(/batch_(\d+)\/group_(\d+)/)!.slice(1).map(Number).join('_');
        const sideEffects = join(rlDir, '.cookbook', 'store', 'side_effects');
        const recordDir = readdirSync(sideEffects).find((d) => d.startsWith(`${position}_`));
        const recorded = new Map<string, string>();
        for (const f of recordDir ? readdirSync(join(sideEffects, recordDir)).filter((f) => f.startsWith('tool_episode_')) : []) {
          const r = JSON.parse(readFileSync(join(sideEffects, recordDir!, f), 'utf8'));
          recorded.set(f, r.value.messages[0].content);
        }
        for (const [e, traj] of group.trajectoriesG.entries()) {
          episodes += 1;
          if (traj.transitions[0].logs.tool_call_0 !== undefined) firstTurnCalls += 1;
          for (const [t, tr] of traj.transitions.entries()) {
            for (let i = 0; tr.logs[`tool_call_${i}`] !== undefined; i++) {
              const call = String(tr.logs[`tool_call_${i}`]);
              const text = String(tr.logs[`tool_result_${i}`]);
              const args = JSON.parse(/^search\((.*)\)$/s.exec(call)![1]);
              // The tool's own answer for these arguments: the BM25 documents (or its refusal of a blank query).
              const fresh = await search.run({ arguments: args });
              expect(text, call).toBe(fresh.messages[0].content);
              // Recorded once in the run store under (episode, turn, call) before the rollout used it.
              expect(recorded.get(`tool_episode_${e}_turn_${t + 1}_call_${i}.json`), call).toBe(text);
              // The policy saw the result: the next observation holds it as Qwen3's <tool_response>.
              const next = traj.transitions[t + 1];
              if (next) expect(tok.decode(next.ob.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : [])), { skipSpecialTokens: false })).toContain(`<tool_response>\n${text}\n</tool_response>`);
              calls.push({ call, result: text });
            }
          }
        }
      }
    }
    const rate = firstTurnCalls / episodes;
    console.log(
      `[pipeline_search_tool] ${((Date.now() - started) / 1000).toFixed(0)} s; SFT nll ${nll[0].toFixed(2)} → ${nll.at(-1)!.toFixed(2)} over ${nll.length} steps; ` +
        `RL: ${firstTurnCalls}/${episodes} episodes open with a parsed tool call, ${calls.length} calls in all`,
    );
    // Measured at 35-50% of first turns (docs/tool-use.md); a model that never learned the format gives 0.
    expect(rate).toBeGreaterThanOrEqual(0.15);
    const ok = calls.filter((c) => c.result.startsWith('Query: '));
    expect(ok.length).toBeGreaterThan(0);

    // The report of the pipeline (both stages): each call and its result in the RL stage's rollout browser.
    const html = await buildReportHtml([run.run.logPath]);
    for (const { call, result } of calls) {
      expect(html).toContain(`<pre class="tool-call-text">${esc(call)}</pre>`);
      // A refused call (a blank query) is the tool library's error message, marked as one.
      expect(html).toContain(`<pre class="tool-result${result.startsWith('{"error"') ? ' bad' : ''}">${esc(result)}</pre>`);
    }
    expect(html).toContain(esc(`<tool_response>\n${ok[0].result}\n</tool_response>`));
  });
});
