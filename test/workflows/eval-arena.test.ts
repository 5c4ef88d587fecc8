// Arena-Hard through `cookbook eval`'s workflow on the real stack (Temporal dev server, the engine
// over HTTP, tiny-qwen3 with its real tokenizer), judged by a tiny model on the engine: each sample's
// judge reply is recorded in the run's store under its (example, sample), and grading again through
// those records never asks the judge (one that throws if asked). The fuller tier also asks the
// engine's judge the judge prompt of each stored response (it replies what was recorded) and judges
// with the same model behind `cookbook serve`'s OpenAI-compatible endpoint.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { createTinkerBackend } from '../../src/backends/index.js';
import { resolveEval, startEval } from '../../src/cli/eval.js';
import { loadBenchmark } from '../../src/cookbook/eval/benchmark-data.js';
import { aggregateResults } from '../../src/cookbook/eval/benchmark-run.js';
import { JudgeConfigSchema, openTinkerJudge, type Judge } from '../../src/cookbook/eval/judge.js';
import type { EvalResultsFile } from '../../src/cookbook/eval/results.js';
import { arenaHard, arenaHardJudgePrompt } from '../../src/cookbook/eval/suites/arena-hard.js';
import { runStoreOnce } from '../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import type { EvalWorkflowResult } from '../../src/workflows/eval.js';
import { startServe, stopServe } from '../support/serve.js';
import { startTestStack, withWorker, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const MODEL = 'tiny-qwen3';
const KEY_ENV = 'H56G_ARENA_JUDGE_KEY';
let stack: TestStack;
let serve: ChildProcess | undefined;
let counter = 0;
/** The engine-judged eval, which the fuller tier's checks look at again. */
let tinker: { result: EvalWorkflowResult; file: EvalResultsFile; replies: string[] } | undefined;

async function evaluate(set: string[]): Promise<{ result: EvalWorkflowResult; file: EvalResultsFile }> {
  const r = resolveEval(MODEL, 'arena_hard', { limit: '2', set: ['max_tokens=8', 'judge.max_tokens=8', ...set] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-arena-test-${++counter}` });
  const result = (await (await startEval(stack.client, r, stack.taskQueue)).result()) as EvalWorkflowResult;
  return { result, file: JSON.parse(readFileSync(result.resultsPath, 'utf8')) as EvalResultsFile };
}

/** A judge that must not be asked: grading through the records only. */
const unaskable = (name: string): Judge => ({
  name,
  ask: async () => {
    throw new Error(`${name} was asked again`);
  },
});

/** Every example graded, aggregate the suite's, each judge reply recorded; grading again reads the records. Returns the replies. */
async function checkRun(result: EvalWorkflowResult, file: EvalResultsFile, judgeName: string): Promise<string[]> {
  const { items } = await loadBenchmark({ suite: 'arena_hard', data_path: null, data_name: null, data_split: null, limit: 2, system_prompt: null });
  expect(result.status).toBe('completed');
  expect(file.examples.map((e) => e.id)).toEqual(items.map((i) => i.id));
  expect(result.metrics).toEqual(aggregateResults(arenaHard, file.examples));
  expect(Object.keys(result.metrics).sort()).toEqual(['avg_score', 'num_correct', 'num_examples', 'score', 'score_stderr', 'win_rate']);
  const store = new RunStore(result.logPath);
  const replies: string[] = [];
  for (const [i, e] of file.examples.entries()) {
    const record = JSON.parse(store.readBlob(`side_effects/eval_${i}_0/judge.json`).toString('utf8')) as { request: string; value: string };
    expect(record.request.startsWith(`${judgeName} sha256:`)).toBe(true);
    expect(typeof record.value).toBe('string');
    replies.push(record.value);
    const again = await arenaHard.grade(e.response, items[i], { message: null, once: runStoreOnce(store, ['eval', i, 0]), judge: unaskable(judgeName) });
    expect({ correct: again.correct, extracted: again.extracted, metrics: again.metrics }).toEqual({ correct: e.correct, extracted: e.extracted, metrics: e.metrics });
  }
  return replies;
}

describe('arena_hard eval with a judge', () => {
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stopServe(serve);
    delete process.env[KEY_ENV];
    await stack?.stop();
  });

  it('judged by a tiny model on the engine: every sample judged once, its reply recorded and read back', async () => {
    await withWorker(stack, async () => {
      const { result, file } = await evaluate([`judge.model=${MODEL}`]);
      tinker = { result, file, replies: await checkRun(result, file, `tinker ${MODEL}`) };
    });
  }, 180_000);

  it.skipIf(!fullTier)('the engine judge replies what was recorded; an OpenAI-compatible endpoint judges too', async () => {
    expect(tinker).toBeDefined();
    // The engine's judge (greedy: any seed) asked the judge prompt of each stored response.
    const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test', env: {} });
    try {
      const judgeFor = await openTinkerJudge(JudgeConfigSchema.parse({ model: MODEL, max_tokens: 8 }), {
        openSession: (source) => backend.createSamplingSession(source),
        baseModelOf: async () => MODEL,
        evaluated: { baseModel: MODEL, modelPath: null, rendererName: null, tokenizerPath: null },
      });
      const { items } = await loadBenchmark({ suite: 'arena_hard', data_path: null, data_name: null, data_split: null, limit: 2, system_prompt: null });
      for (const [i, e] of tinker!.file.examples.entries()) {
        const question = (items[i].target as { question: string }).question;
        expect(await judgeFor(123).ask([{ role: 'user', content: arenaHardJudgePrompt(question, e.response) }])).toBe(tinker!.replies[i]);
      }
    } finally {
      await backend.close();
    }

    const served = await startServe(stack.engine.baseUrl, [MODEL, '--api-key', 'sk-h56g-judge']);
    serve = served.child;
    process.env[KEY_ENV] = 'sk-h56g-judge';
    await withWorker(stack, async () => {
      const openai = await evaluate(['judge.api=openai', `judge.base_url=${served.url}`, `judge.model=${MODEL}`, `judge.api_key_env=${KEY_ENV}`]);
      await checkRun(openai.result, openai.file, `openai ${served.url}/chat/completions ${MODEL}`);
      // The same responses (same seeds) as the engine-judged eval: only the judge changed.
      expect(openai.file.examples.map((e) => e.response)).toEqual(tinker!.file.examples.map((e) => e.response));
    });
  }, 300_000);
});
