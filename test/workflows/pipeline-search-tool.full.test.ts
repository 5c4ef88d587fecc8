// configs/pipeline_search_tool.json on the real stack: a supervised warm-up on the search_tool
// transcripts (data/search_tool/sft_tool_calls.jsonl), then search_tool RL from its weights. The
// randomly initialised tiny model writes no tool call of its own (rl-search.test.ts); after the
// warm-up its RL rollouts call `search` at the RL temperature, each call is dispatched (the real
// BM25 result, recorded once in the run store), its result is the next observation's
// <tool_response>, and `cookbook report`'s rollout browser shows the call and the result.
// Fuller tier: the warm-up is 160 SFT steps over ~750-token transcripts (15 minutes on an idle
// 2-core machine; 34 with a one-thread engine beside other suites).
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSearchCorpus, searchTool } from '../../src/cookbook/rl/envs/search-tool.js';
import { getTokenizer } from '../../src/cookbook/tokenizer.js';
import { esc } from '../../src/report/html.js';
import { buildReportHtml } from '../../src/report/report.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { rolloutToolCalls, runWarmupPipeline } from '../support/tool-calls.js';

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
    const { rlDir, nll, seconds, logPath } = await runWarmupPipeline(stack, CONFIG, RL_STEPS);

    // Every logged call, checked against the tool and the run store.
    const tok = await getTokenizer('tiny-qwen3');
    const search = searchTool(loadSearchCorpus(join(REPO, 'data/search_tool/corpus.jsonl'), 'corpus.jsonl'));
    const { steps, episodes, firstTurnCalls, calls } = rolloutToolCalls(rlDir, tok);
    expect(steps).toEqual([...Array(RL_STEPS).keys()]);
    for (const c of calls) {
      const args = JSON.parse(/^search\((.*)\)$/s.exec(c.call)![1]);
      // The tool's own answer for these arguments: the BM25 documents (or its refusal of a blank query).
      const fresh = await search.run({ arguments: args });
      expect(c.result, c.call).toBe(fresh.messages[0].content);
      // Recorded once in the run store under (episode, turn, call) before the rollout used it.
      expect(c.recorded, c.call).toBe(c.result);
      // The policy saw the result: the next observation holds it as Qwen3's <tool_response>.
      if (c.nextObservation !== null) expect(c.nextObservation).toContain(`<tool_response>\n${c.result}\n</tool_response>`);
    }
    const rate = firstTurnCalls / episodes;
    console.log(
      `[pipeline_search_tool] ${seconds.toFixed(0)} s; SFT nll ${nll[0].toFixed(2)} → ${nll.at(-1)!.toFixed(2)} over ${nll.length} steps; ` +
        `RL: ${firstTurnCalls}/${episodes} episodes open with a parsed tool call, ${calls.length} calls in all`,
    );
    // Measured at 35-50% of first turns (docs/tool-use.md); a model that never learned the format gives 0.
    expect(rate).toBeGreaterThanOrEqual(0.15);
    const ok = calls.filter((c) => c.result.startsWith('Query: '));
    expect(ok.length).toBeGreaterThan(0);

    // The report of the pipeline (both stages): each call and its result in the RL stage's rollout browser.
    const html = await buildReportHtml([logPath]);
    for (const { call, result } of calls) {
      expect(html).toContain(`<pre class="tool-call-text">${esc(call)}</pre>`);
      // A refused call (a blank query) is the tool library's error message, marked as one.
      expect(html).toContain(`<pre class="tool-result${result.startsWith('{"error"') ? ' bad' : ''}">${esc(result)}</pre>`);
    }
    expect(html).toContain(esc(`<tool_response>\n${ok[0].result}\n</tool_response>`));
  });
});
