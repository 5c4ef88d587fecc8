// The search_tool warm-up data (data/search_tool/sft_tool_calls.jsonl, scripts/gen-search-sft.ts):
// regenerable byte for byte, and what the RL env itself would show and parse. Each transcript is
// stepped through the real env (buildSearchEnv) with its assistant turns, rendered, as the
// actions: the env parses the same tool call, appends the same tool message (the BM25 result), its
// observations are the SFT datum's tokens before each trained turn, and the answer grades correct.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import { buildSearchEnv, loadSearchCorpus, loadSearchData, searchInitialMessages, searchTool, type SearchCorpus } from '../../../src/cookbook/rl/envs/search-tool.js';
import { loadConversationsJsonl, type ConversationRow } from '../../../src/cookbook/supervised/jsonl.js';
import { getTokenizer } from '../../../src/cookbook/tokenizer.js';
import { replayTranscript } from '../../support/tool-calls.js';

const REPO = join(import.meta.dirname, '..', '..', '..');
const FILE = join(REPO, 'data', 'search_tool', 'sft_tool_calls.jsonl');
const ENV_OPTS = { maxTurns: 3, formatCoef: 0.1, maxTrajectoryTokens: 4096, maxGenerationTokens: null, contextOverflowReward: -0.1, nResults: 3 };

let renderer: Renderer;
let corpus: SearchCorpus;
let rows: ConversationRow[];
const dirs: string[] = [];
beforeAll(async () => {
  renderer = getRenderer('qwen3', await getTokenizer('tiny-qwen3'));
  corpus = loadSearchCorpus(join(REPO, 'data/search_tool/corpus.jsonl'), 'corpus.jsonl');
  rows = await loadConversationsJsonl(FILE);
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('search_tool warm-up transcripts', () => {
  it('are exactly what scripts/gen-search-sft.ts writes', () => {
    const out = mkdtempSync(join(tmpdir(), 'search-sft-'));
    dirs.push(out);
    execFileSync(process.execPath, ['--import', 'tsx', join(REPO, 'scripts', 'gen-search-sft.ts'), out], { cwd: REPO });
    expect(readFileSync(join(out, 'sft_tool_calls.jsonl')).equals(readFileSync(FILE))).toBe(true);
  });

  it('one per training question, in order: the env prompt, one or two searches, the gold answer', () => {
    const train = loadSearchData(join(REPO, 'data/search_tool/train.jsonl'), 'train.jsonl');
    expect(rows.map((r) => r.messages[1].content)).toEqual(train.map((d) => d.question));
    const search = searchTool(corpus);
    for (const [i, { messages }] of rows.entries()) {
      expect(messages.slice(0, 2)).toEqual(searchInitialMessages(renderer, search, train[i].question));
      const calls = messages.filter((m) => m.tool_calls);
      expect(calls.length).toBeGreaterThanOrEqual(1);
      expect(calls.length).toBeLessThanOrEqual(2);
      expect(messages.at(-1)).toEqual({ role: 'assistant', content: `Answer: ${train[i].answer[0]}` });
      // The first search is the question itself.
      expect(JSON.parse(calls[0].tool_calls![0].function.arguments)).toEqual({ query_list: [train[i].question] });
    }
    const multi = rows.filter((r) => r.messages.filter((m) => m.tool_calls).length === 2);
    expect(multi.length).toBeGreaterThan(50);
    // A second search names the bridge the first found: "… used in the country whose capital is Nairobi?" → "… used in Kenya?".
    const nairobi = multi.find((r) => r.messages[1].content === 'What currency is used in the country whose capital is Paris?')!;
    expect(JSON.parse(nairobi.messages[4].tool_calls![0].function.arguments)).toEqual({ query_list: ['What currency is used in France?'] });
  });

  it('stepped through the RL env: the same observations as the SFT datum, the same calls and results, graded correct', async () => {
    // Every multi-hop transcript and every fifth single-hop one (the env indexes nothing new, so this is quick).
    const sample = rows.filter((r, i) => r.messages.length > 5 || i % 5 === 0);
    for (const { messages, line } of sample) {
      const train = loadSearchData(join(REPO, 'data/search_tool/train.jsonl'), 'train.jsonl')[line - 1];
      const env = buildSearchEnv(renderer, corpus, train, ENV_OPTS);
      for await (const { turn, observation, datumPrefix, assistant, toolResult, step } of replayTranscript(env, renderer, messages)) {
        const at = `line ${line}, turn ${turn}`;
        // The env's observation is exactly what the SFT datum conditions this turn on...
        expect(observation, at).toEqual(datumPrefix);
        // ...and the trained tokens, as the action, make the env do what the transcript says.
        const call = assistant.tool_calls?.[0];
        if (call) {
          const logged = /^search\((.*)\)$/s.exec(String(step.logs?.tool_call_0));
          expect(logged, at).not.toBeNull();
          expect(JSON.parse(logged![1]), at).toEqual(JSON.parse(call.function.arguments));
          expect(step.logs?.tool_result_0, at).toBe(toolResult!.content);
          expect(step.episodeDone, at).toBe(false);
        } else {
          expect(step.episodeDone, at).toBe(true);
          expect(step.reward, at).toBe(1);
          expect(step.metrics, at).toMatchObject({ format: 1, correct: 1 });
        }
      }
    }
  });
});
