// tau2_bench through `cookbook eval`'s workflow on the real stack (Temporal dev server, the engine
// over HTTP, tiny-qwen3 with its real tokenizer as both the agent and — no judge configured — the
// simulated customer), one task of the shipped sample: the result is graded and aggregated as the
// agentic suites are, each customer reply is recorded at (example, sample, turn), and the episode
// played again from those records (a customer that throws if asked, the agent's turns re-sampled
// with the same seeds) reaches the same conversation and grade — what a retried chunk does.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend } from '../../src/backends/index.js';
import { resolveEval, startEval } from '../../src/cli/eval.js';
import type { Judge } from '../../src/cookbook/eval/judge.js';
import { loadTau2Tasks } from '../../src/cookbook/eval/suites/tau2-data.js';
import { evaluateTau2Task } from '../../src/cookbook/eval/suites/tau2-run.js';
import { aggregateTerminal, type TerminalResultsFile } from '../../src/cookbook/eval/suites/terminal-results.js';
import { rendererForModel } from '../../src/cookbook/renderers/for-model.js';
import { runStoreOnce } from '../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { toolDeclaring } from '../../src/cookbook/tool-use/index.js';
import type { EvalWorkflowResult } from '../../src/workflows/eval.js';
import { startTestStack, withWorker, type TestStack } from '../support/stack.js';

const MODEL = 'tiny-qwen3';
const SHIPPED = join(import.meta.dirname, '..', '..', 'data', 'eval', 'tau2_bench');
let stack: TestStack;

const unaskable: Judge = {
  name: `tinker ${MODEL}`,
  ask: async () => {
    throw new Error('the customer was asked again');
  },
};

describe('tau2_bench eval', () => {
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('one conversation with tiny-qwen3 as agent and customer: graded, its customer replies recorded, replayed from them to the same result', async () => {
    const set = ['max_tokens=12', 'judge.max_tokens=12', 'terminal.max_turns=2'];
    const r = resolveEval(MODEL, 'tau2_bench', { limit: '1', data: SHIPPED, set }, { runsDir: join(stack.dir, 'runs'), workflowId: 'eval-tau2-test' });
    const result = await withWorker(stack, async () => (await (await startEval(stack.client, r, stack.taskQueue)).result()) as EvalWorkflowResult);
    expect(result.status).toBe('completed');
    const file = JSON.parse(readFileSync(result.resultsPath, 'utf8')) as TerminalResultsFile;
    const [task] = loadTau2Tasks(SHIPPED, 1, null);
    expect(file.examples.map((e) => e.id)).toEqual([task!.taskName]);
    const [ex] = file.examples;
    expect(ex!.error).toBeNull();
    expect(ex!.turns).toBeGreaterThanOrEqual(1);
    expect(ex!.turns).toBeLessThanOrEqual(2);
    // A turn cut by max_tokens ends the conversation with reward 0 (the reference's message env); else the action score.
    if (ex!.stop_reason === 'max_tokens') expect([ex!.reward, ex!.reward_details.max_tokens_reached]).toEqual([0, 1]);
    else expect(ex!.reward_details.action_score).toBe(ex!.reward);
    expect(result.metrics).toEqual(aggregateTerminal(file.examples));

    // The opening, recorded at (example 0, sample 0, turn 0) of chunk 0.
    const store = new RunStore(result.logPath);
    const opening = JSON.parse(store.readBlob('side_effects/eval_0_0/user_0_0.json').toString('utf8')) as { request: string; value: unknown };
    expect(opening.request.startsWith(`tinker ${MODEL} sha256:`)).toBe(true);
    expect(typeof opening.value).toBe('string');

    // Played again as a retried chunk would: the same seeds, the customer's replies read back.
    const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test', env: {} });
    try {
      const { renderer } = await rendererForModel({ model_name: MODEL, renderer_name: null, tokenizer_path: null });
      let replayed = '';
      const again = await evaluateTau2Task(0, task!, {
        session: await backend.createSamplingSession({ baseModel: MODEL }),
        renderer: toolDeclaring(renderer, 'tau2_bench'),
        sampling: { seed: file.sampling.seed, max_tokens: file.sampling.max_tokens, temperature: file.sampling.temperature },
        terminal: file.terminal,
        onceFor: (index) => runStoreOnce(store, ['eval', 0, index]),
        writeTrajectory: (_task, text) => ((replayed = text), 'replayed'),
        userFor: () => unaskable,
      });
      const keep = (e: typeof ex) => ({ status: e!.status, reward: e!.reward, reward_details: e!.reward_details, turns: e!.turns, stop_reason: e!.stop_reason });
      expect(keep(again)).toEqual(keep(ex));
      const written = JSON.parse(readFileSync(join(result.logPath, ex!.trajectory!), 'utf8')) as { messages: unknown[] };
      expect(written.messages.length).toBeGreaterThanOrEqual(2);
      expect((JSON.parse(replayed) as { messages: unknown[] }).messages).toEqual(written.messages);
    } finally {
      await backend.close();
    }
  }, 180_000);
});
