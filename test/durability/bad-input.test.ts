// The bad-input matrix: each row gives one clear error naming the place; no run is left
// half-started (no workflow, no log dir), no checkpoint half-recorded, nothing written is lost.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend } from '../../src/backends/index.js';
import { BackendError } from '../../src/backends/types.js';
import { checkBackend, checkRunData, resolveRun, startRun, type ResolvedRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { startEngine, type EngineHandle } from '../support/engine.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const dir = mkdtempSync(join(tmpdir(), 'cookbook-bad-input-'));
const chat = (user: string, assistant: string) => JSON.stringify({ messages: [{ role: 'user', content: user }, { role: 'assistant', content: assistant }] });
const goodRows = Array.from({ length: 8 }, (_, i) => chat(`What is ${i} + ${i}?`, `${2 * i}`));

function config(name: string, rows: string[], extra: Record<string, unknown> = {}): string {
  writeFileSync(join(dir, `${name}.jsonl`), rows.join('\n') + '\n');
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify({ model_name: 'tiny-qwen3', dataset: { file_path: `${name}.jsonl`, batch_size: 2, max_length: 64 }, lora_rank: 4, ...extra }));
  return path;
}

/** What `cookbook train` does before a run exists; returns the error message. */
async function rejectBeforeStart(configPath: string, overrides: string[] = [], kind = 'sl'): Promise<string> {
  let resolved: ResolvedRun | undefined;
  try {
    resolved = resolveRun(kind, configPath, [...overrides, `log_path=${join(dir, 'runs', String(Math.random()))}`]);
    await checkRunData(resolved);
  } catch (err) {
    if (resolved) expect(existsSync(resolved.run.logPath)).toBe(false);
    return (err as Error).message;
  }
  throw new Error('expected the run to be rejected before it started');
}

function failureOf(err: unknown): ApplicationFailure {
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const activity = (err as WorkflowFailedError).cause;
  expect(activity).toBeInstanceOf(ActivityFailure);
  return (activity as ActivityFailure).cause as ApplicationFailure;
}

describe('bad input: rejected before a run starts', () => {
  it('unknown config keys are named', async () => {
    expect(await rejectBeforeStart(config('unknown-key', goodRows), ['lerning_rate=0.1'])).toMatch(/command-line override lerning_rate=0.1: lerning_rate: unknown config key; did you mean learning_rate\?/);
  });
  it('wrong types name the config path', async () => {
    expect(await rejectBeforeStart(config('wrong-type', goodRows), ['dataset.batch_size="eight"'])).toMatch(/dataset\.batch_size: .*number/i);
  });
  it('a missing dataset file is named', async () => {
    const path = config('missing', goodRows, { dataset: { file_path: 'nowhere.jsonl', batch_size: 2, max_length: 64 } });
    expect(await rejectBeforeStart(path)).toMatch(/dataset\.file_path: .*nowhere\.jsonl does not exist/);
  });
  it('a JSONL file with one broken line names file and line', async () => {
    const rows = [...goodRows.slice(0, 5), '{"messages": [{"role": "user", "content": "oops"', ...goodRows.slice(5)];
    expect(await rejectBeforeStart(config('broken-line', rows))).toMatch(/broken-line\.jsonl:6\b/);
  });
  it('an empty dataset is reported as such', async () => {
    expect(await rejectBeforeStart(config('empty', ['']))).toMatch(/empty|no (rows|conversations)|fewer/i);
  });
  it('a conversation with no trainable tokens names its line', async () => {
    const rows = [JSON.stringify({ messages: [{ role: 'user', content: 'only a question' }] }), ...goodRows];
    expect(await rejectBeforeStart(config('untrainable', rows))).toMatch(/untrainable\.jsonl:1\b/);
  });
  it('an RL evaluator file with a broken line, and an environment nobody registered, are named', async () => {
    writeFileSync(join(dir, 'eval-broken.jsonl'), '{"input": "a", "output": "b"}\n{"input": "c"\n');
    const rl = join(dir, 'rl.json');
    writeFileSync(rl, JSON.stringify({ model_name: 'tiny-qwen3', dataset: { kind: 'arithmetic', batch_size: 1, group_size: 2, n_batches: 1 }, max_tokens: 4, evaluators: [{ kind: 'custom_sampling', file_path: 'eval-broken.jsonl' }] }));
    expect(await rejectBeforeStart(rl, [], 'rl')).toMatch(/^evaluators\.0\.file_path: .*eval-broken\.jsonl:2: invalid JSON/);
    expect(await rejectBeforeStart(rl, ['evaluators=[]', 'dataset={"kind":"custom","name":"nope"}'], 'rl')).toMatch(/dataset\.name: no RL environment is registered as "nope"/);
  });
});

describe('bad input: at the backend', () => {
  let stack: TestStack;
  let lockedEngine: EngineHandle;
  beforeAll(async () => {
    [stack, lockedEngine] = await Promise.all([startTestStack(), startEngine({ extraArgs: ['--api-key', 'tml-the-right-key'] })]);
  });
  afterAll(async () => {
    await Promise.all([stack?.stop(), lockedEngine?.stop()]);
  });

  it('an unreachable engine is named before a run starts', async () => {
    await expect(checkBackend('http://127.0.0.1:9', 'tiny-qwen3')).rejects.toThrow(/cannot reach the training backend at http:\/\/127\.0\.0\.1:9/);
  });

  it('a wrong API key is rejected before a run starts, and fails a running worker at once', async () => {
    const saved = process.env.TINKER_API_KEY;
    process.env.TINKER_API_KEY = 'tml-wrong';
    try {
      await expect(checkBackend(lockedEngine.baseUrl, 'tiny-qwen3')).rejects.toThrow(/rejected the API key \(HTTP 401\)/);
    } finally {
      if (saved === undefined) delete process.env.TINKER_API_KEY;
      else process.env.TINKER_API_KEY = saved;
    }
    const run = testRun(stack, config('auth', goodRows), [`base_url=${lockedEngine.baseUrl}`]);
    const err = await withWorker(stack, () => startRun(stack.client, run, stack.taskQueue).then((h) => h.result()).catch((e: unknown) => e));
    const failure = failureOf(err);
    expect(failure.type).toBe('AuthError');
    expect(failure.message).toMatch(/create_model.*401|401.*create_model/s);
    expect(new RunStore(run.run.logPath).readCheckpoints()).toEqual([]);
  });

  it('token ids beyond the vocabulary get a 400 naming them, and the model is unharmed', async () => {
    const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test' });
    try {
      const session = await backend.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4, seed: 1 } });
      const datum = (tokens: number[]) => ({
        model_input: { chunks: [{ type: 'encoded_text' as const, tokens }] },
        loss_fn_inputs: { target_tokens: { data: tokens, dtype: 'int64' as const }, weights: { data: tokens.map(() => 1), dtype: 'float32' as const } },
      });
      const bad = await session.forwardBackward([datum([1, 2, 99_999_999])], 'cross_entropy', { seqId: 1 }).then((s) => s.result()).catch((e: unknown) => e);
      expect(bad).toBeInstanceOf(BackendError);
      expect((bad as BackendError).status).toBe(400);
      expect(String((bad as BackendError).message) + JSON.stringify((bad as BackendError).detail)).toMatch(/99999999|vocab/i);
      // The same model goes on training with valid data (the rejected request used its seq id).
      const ok = await (await session.forwardBackward([datum([1, 2, 3])], 'cross_entropy', { seqId: 2 })).result();
      expect(Number.isFinite(ok.metrics['loss:sum'])).toBe(true);
    } finally {
      await backend.close();
    }
  });

  it('a non-finite loss stops the run with the step named; committed checkpoints stay intact', async () => {
    const run = testRun(stack, config('diverge', goodRows), ['learning_rate=1e30', 'save_every=1', 'eval_every=0', 'num_epochs=3']);
    const err = await withWorker(stack, () => startRun(stack.client, run, stack.taskQueue).then((h) => h.result()).catch((e: unknown) => e));
    const failure = failureOf(err);
    expect(failure.type).toBe('NonFiniteLoss');
    expect(failure.message).toMatch(/non-finite/);
    // Every recorded checkpoint is whole and restorable.
    const rows = new RunStore(run.run.logPath).readCheckpoints();
    const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test' });
    try {
      for (const row of rows) expect((await backend.weightsInfo(row.state_path!)).base_model).toBe('tiny-qwen3');
    } finally {
      await backend.close();
    }
  });
});
