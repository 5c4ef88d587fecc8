// tau2_bench's multi-turn loop on the real stack with the engine writing every agent turn. The random
// tiny model ends each turn at max_tokens (the gate's eval-tau2.test.ts checks that path), so here a
// LoRA of tiny-qwen3 is taught one whole conversation of the shipped task 0 (its db, one tool and a
// one-line policy, so prompts stay short): ask the customer, cancel the reservation (a tool call),
// say goodbye. The conversation is first played by the episode code itself with a scripted sampler
// and the real customer (tiny-qwen3 on the engine, greedy), which gives each agent prompt exactly as
// the eval renders it; the LoRA is taught those prompts' replies (test/support/taught-replies.ts,
// about 100 steps: ~10 min on a loaded 2-core machine). Then `cookbook eval`'s workflow
// evaluates the checkpoint, and must play the same conversation: three agent turns, the tool call
// answered by the airline db, the customer asked twice (each reply recorded), the expected
// cancel_reservation matched (PASS). Fuller tier: teaching takes minutes.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend } from '../../src/backends/index.js';
import type { TinkerBackend } from '../../src/backends/tinker-backend.js';
import type { SampleResponse, SamplingSession } from '../../src/backends/types.js';
import { resolveEval, startEval } from '../../src/cli/eval.js';
import { JudgeConfigSchema, openTinkerJudge } from '../../src/cookbook/eval/judge.js';
import { loadTau2Tasks } from '../../src/cookbook/eval/suites/tau2-data.js';
import { evaluateTau2Task } from '../../src/cookbook/eval/suites/tau2-run.js';
import type { TerminalResultsFile } from '../../src/cookbook/eval/suites/terminal-results.js';
import { TerminalEvalSchema } from '../../src/cookbook/eval/suites/terminal.js';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { rendererForModel } from '../../src/cookbook/renderers/for-model.js';
import { actAlways } from '../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { toolDeclaring } from '../../src/cookbook/tool-use/index.js';
import type { EvalWorkflowResult } from '../../src/workflows/eval.js';
import { startTestStack, withWorker, type TestStack } from '../support/stack.js';
import { teachReplies, type TaughtReply } from '../support/taught-replies.js';
import { fullTier } from '../support/tier.js';

const MODEL = 'tiny-qwen3';
const SHIPPED = join(import.meta.dirname, '..', '..', 'data', 'eval', 'tau2_bench', 'airline');
const CUSTOMER = { model: MODEL, max_tokens: 12, temperature: 0 };
const MAX_TURNS = 6;
/**
 * The shipped task 0 and db with one tool and a one-line policy: the same loop on prompts of a few
 * hundred tokens, which a LoRA learns in far fewer steps than the full policy and ten tools.
 */
function smallAirline(dir: string): string {
  const domain = join(dir, 'airline');
  mkdirSync(domain, { recursive: true });
  const read = (f: string) => JSON.parse(readFileSync(join(SHIPPED, f), 'utf8')) as unknown;
  const tools = (read('tools.json') as { airline: { tools: Array<{ name: string }> } }).airline.tools.filter((t) => t.name === 'cancel_reservation');
  writeFileSync(join(domain, 'tools.json'), JSON.stringify({ airline: { tools } }));
  writeFileSync(join(domain, 'tasks.json'), JSON.stringify((read('tasks.json') as unknown[]).slice(0, 1)));
  writeFileSync(join(domain, 'db.json'), JSON.stringify(read('db.json')));
  writeFileSync(join(domain, 'policy.md'), 'You are an airline support agent. Cancel a reservation when its owner asks.\n');
  return dir;
}
/** The agent's three turns (Qwen3's format, empty thinking). */
const AGENT_TURNS = [
  '<think>\n\n</think>\n\nShall I cancel reservation NO6JO3?',
  '<think>\n\n</think>\n\n<tool_call>\n{"name": "cancel_reservation", "arguments": {"reservation_id": "NO6JO3"}}\n</tool_call>',
  '<think>\n\n</think>\n\nReservation NO6JO3 is cancelled. Goodbye.',
];

let stack: TestStack;
let backend: TinkerBackend;

describe.runIf(fullTier)('tau2_bench with the engine writing the agent’s turns', () => {
  beforeAll(async () => {
    stack = await startTestStack();
    backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test', env: {} });
  }, 120_000);
  afterAll(async () => {
    await backend?.close();
    await stack?.stop();
  });

  it('a taught LoRA plays the whole conversation through the eval workflow: the tool call answered, the customer asked and recorded, PASS', async () => {
    const data = smallAirline(join(stack.dir, 'tau2-small'));
    const [task] = loadTau2Tasks(data, 1, null);
    const { renderer, tokenizer } = await rendererForModel({ model_name: MODEL, renderer_name: null, tokenizer_path: null });
    const imEnd = tokenizer.tokenToId('<|im_end|>');
    const replies = AGENT_TURNS.map((text) => [...tokenizer.encode(text, { addSpecialTokens: false }), imEnd]);
    const customer = await openTinkerJudge(JudgeConfigSchema.parse(CUSTOMER), {
      openSession: (source) => backend.createSamplingSession(source),
      baseModelOf: async () => MODEL,
      evaluated: { baseModel: MODEL, modelPath: null, rendererName: null, tokenizerPath: null },
    });

    // The conversation played by the episode code with the scripted agent: the prompts it renders.
    const prompts: number[][] = [];
    const scripted: SamplingSession = {
      samplingSessionId: 'scripted-tau2-agent',
      async sample(prompt): Promise<SampleResponse> {
        const tokens = replies[prompts.length];
        if (!tokens) throw new Error(`the scripted agent has no turn ${prompts.length + 1}`);
        prompts.push(modelInputToInts(prompt));
        return { sequences: [{ tokens, logprobs: tokens.map(() => -0.01), stop_reason: 'stop' }] };
      },
      computeLogprobs: async () => [],
    };
    let scriptedTrajectory = '';
    const expected = await evaluateTau2Task(0, task!, {
      session: scripted,
      renderer: toolDeclaring(renderer, 'tau2_bench'),
      sampling: { seed: 0, max_tokens: 64, temperature: 0 },
      terminal: TerminalEvalSchema.parse({ max_turns: MAX_TURNS }),
      onceFor: () => actAlways,
      writeTrajectory: (_task, text) => ((scriptedTrajectory = text), 'scripted'),
      userFor: () => customer(0),
    });
    // The script is the conversation it means to be: every turn used, the expected action matched.
    expect([expected.stop_reason, expected.turns, expected.reward, expected.status]).toEqual(['agent_done', 3, 1, 'PASS']);
    expect(prompts).toHaveLength(3);

    process.stderr.write(`[tau2] teaching ${prompts.length} prompts of ${prompts.map((p) => p.length).join(', ')} tokens\n`);
    const taught = await teachReplies(backend, MODEL, prompts.map((prompt, k): TaughtReply => ({ prompt, reply: replies[k]! })), { name: 'tau2-conversation' });
    process.stderr.write(`[tau2] conversation taught in ${taught.steps} steps (mean NLL ${taught.nll.toFixed(4)})\n`);

    const set = ['max_tokens=64', 'temperature=0', ...Object.entries(CUSTOMER).map(([k, v]) => `judge.${k}=${v}`), `terminal.max_turns=${MAX_TURNS}`];
    const r = resolveEval(taught.path, 'tau2_bench', { limit: '1', data, set }, { runsDir: join(stack.dir, 'runs'), workflowId: 'eval-tau2-taught' });
    const result = await withWorker(stack, async () => (await (await startEval(stack.client, r, stack.taskQueue)).result()) as EvalWorkflowResult);
    expect(result.status).toBe('completed');
    const file = JSON.parse(readFileSync(result.resultsPath, 'utf8')) as TerminalResultsFile;
    const [ex] = file.examples;
    const keep = (e: typeof ex) => ({ status: e!.status, reward: e!.reward, reward_details: e!.reward_details, turns: e!.turns, stop_reason: e!.stop_reason, error: e!.error });
    expect(keep(ex)).toEqual(keep(expected));
    expect(result.metrics.score).toBe(1);
    // The same conversation: the agent's turns as sampled by the engine, the db's answers, the customer's replies.
    const written = JSON.parse(readFileSync(join(result.logPath, ex!.trajectory!), 'utf8')) as { calls: unknown[]; messages: unknown[] };
    const wanted = JSON.parse(scriptedTrajectory) as { calls: unknown[]; messages: unknown[] };
    expect(written.calls).toHaveLength(1);
    expect(written.calls).toEqual(wanted.calls);
    expect(written.messages).toEqual(wanted.messages);
    // The customer was asked twice (the opening, the reply to the question), each reply recorded once.
    const store = new RunStore(result.logPath);
    for (const turn of [0, 1]) expect(store.hasBlob(`side_effects/eval_0_0/user_0_${turn}.json`)).toBe(true);
    expect(store.hasBlob('side_effects/eval_0_0/user_0_2.json')).toBe(false);
  }, 1_800_000);
});
