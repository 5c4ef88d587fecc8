// Off-policy distillation with the teacher's top-K as soft targets, on the real stack (Temporal dev
// server, engine over HTTP, real tokenizer). The teacher is tiny-qwen3 briefly fine-tuned by a
// supervised run; the student is base tiny-qwen3. Then the exactly-once claims: a worker killed in
// a teacher pass and an engine restart mid-run end equal to an uninterrupted run, and the teacher
// passes recorded before a crash are read back, not asked again.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend } from '../../src/backends/index.js';
import type { Datum } from '../../src/backends/types.js';
import { startRun } from '../../src/cli/train.js';
import { teacherForcedInput } from '../../src/cookbook/distillation/topk.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkHistories } from '../support/history.js';
import { checkpointsOf, expectSameTraining, metricsOf } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, untilActivityRunning, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');
const fixture = JSON.parse(readFileSync(join(fixtures, 'distill_off_policy_small.json'), 'utf8'));
const data = (file: string) => join(import.meta.dirname, '..', '..', 'data', file);
const K = fixture.n_teacher_targets as number;

let stack: TestStack;
let teacherPath: string;

/** The fixture with `patch`, its first teacher the fine-tuned one, written into the stack's dir. */
function config(name: string, patch: Record<string, unknown> = {}): string {
  const cfg = structuredClone(fixture);
  cfg.dataset_configs[0].teacher_config.load_checkpoint_path = teacherPath;
  cfg.dataset_configs[0].dataset.file_path = data('example_chat_small.jsonl');
  const path = join(stack.dir, `distill-off-policy-${name}.json`);
  writeFileSync(path, JSON.stringify({ ...cfg, ...patch }));
  return path;
}

const runEnd = (run: { run: { logPath: string } }, result: RunResult) => ({ logPath: run.run.logPath, samplerPath: result.finalCheckpoint!.samplerPath!, baseUrl: stack.engine.baseUrl });

const recorded = (logPath: string, step: number, domain: number): Datum[] =>
  JSON.parse(new RunStore(logPath).readBlob(`teacher_targets/step_${String(step).padStart(6, '0')}/domain_${String(domain).padStart(3, '0')}.json`).toString('utf8'));

beforeAll(async () => {
  stack = await startTestStack({ own: true });
  const teacher = testRun(stack, join(fixtures, 'sl_small.json'), ['num_epochs=1', 'learning_rate=0.02', 'eval_every=0', 'save_every=0']);
  const result = await withWorker(stack, async () => (await (await startRun(stack.client, teacher, stack.taskQueue)).result()) as RunResult);
  teacherPath = result.finalCheckpoint!.samplerPath!;
}, 180_000);
afterAll(async () => {
  await stack?.stop();
});

describe('off-policy distillation (top-K soft targets)', () => {
  it("single teacher: (N, K) targets from the teacher's top-K, the reference's rows and checkpoints, the loss falls", async () => {
    const run = testRun(stack, config('single'), [], 'distill_off_policy');
    const result = await withWorker(stack, () => runToEnd(stack, run));
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(6); // 24 rows / batch 4

    const rows = metricsOf(run.run.logPath);
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(Object.keys(rows[0]).sort()).toEqual(['batch_size', 'optim/lr', 'progress/done_frac', 'step', 'train/loss:sum']);
    expect(rows.map((r) => r['progress/done_frac'])).toEqual([1, 2, 3, 4, 5, 6].map((i) => i / 6));
    expect(rows.every((r) => r['optim/lr'] === 0.01 && r.batch_size === 4)).toBe(true);
    const loss = rows.map((r) => r['train/loss:sum'] as number);
    expect(loss[5]).toBeLessThan(loss[0]);

    // Step 0's targets: K tokens per position, renormalised teacher probabilities on the trained
    // (assistant) positions and zero elsewhere, and exactly the teacher's top-K there.
    const datums = recorded(run.run.logPath, 0, 0);
    expect(datums).toHaveLength(4);
    const { target_tokens, weights } = datums[0].loss_fn_inputs;
    const n = target_tokens.shape![0];
    expect(target_tokens.shape).toEqual([n, K]);
    expect(weights.shape).toEqual([n, K]);
    const rowSums = Array.from({ length: n }, (_, t) => weights.data.slice(t * K, (t + 1) * K).reduce((a, b) => a + b, 0));
    expect(rowSums.some((s) => s === 0)).toBe(true); // the prompt
    for (const s of rowSums.filter((s) => s > 0)) expect(s).toBeCloseTo(1, 5);
    const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test' });
    try {
      const teacher = await backend.createSamplingSession({ modelPath: teacherPath });
      const response = await teacher.sample(teacherForcedInput(datums[0]), 1, { max_tokens: 1 }, { includePromptLogprobs: true, topkPromptLogprobs: K });
      const top = response.topk_prompt_logprobs!.slice(-n);
      const t = rowSums.findIndex((s) => s > 0);
      expect(target_tokens.data.slice(t * K, (t + 1) * K)).toEqual(top[t]!.map(([tok]) => tok));
    } finally {
      await backend.close();
    }

    expect(checkpointsOf(run.run.logPath).map((c) => [c.name, c.batch])).toEqual([['000002', 2], ['000004', 4], ['final', 6]]);
    const hygiene = await checkHistories(stack.client, run.workflowId, ['tml-test']);
    expect(hygiene.maxPayloadBytes).toBeLessThan(16 * 1024);
  }, 180_000);

  it("multi-teacher (MOPD): the batch split by weight, each domain's examples scored by its own teacher", async () => {
    const second = { dataset: { file_path: data('example_arithmetic.jsonl'), batch_size: 4, max_length: 32 }, teacher_config: { base_model: 'tiny-qwen3' }, weight: 1 };
    const cfg = structuredClone(fixture);
    cfg.dataset_configs[0].teacher_config.load_checkpoint_path = teacherPath;
    cfg.dataset_configs[0].dataset.file_path = data('example_chat_small.jsonl');
    cfg.dataset_configs[0].weight = 3;
    const path = join(stack.dir, 'distill-off-policy-multi.json');
    writeFileSync(path, JSON.stringify({ ...cfg, dataset_configs: [cfg.dataset_configs[0], second], max_steps: 2 }));
    const run = testRun(stack, path, [], 'distill_off_policy');
    const result = await withWorker(stack, () => runToEnd(stack, run));
    expect(result.steps).toBe(2);
    expect(metricsOf(run.run.logPath).map((r) => r.batch_size)).toEqual([4, 4]);
    // round(4 · 3/4) = 3 from the chat data, the remaining 1 from the arithmetic data.
    expect([recorded(run.run.logPath, 1, 0).length, recorded(run.run.logPath, 1, 1).length]).toEqual([3, 1]);

    // The same sequence forced through the two teachers gives different targets: routing matters.
    const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test' });
    try {
      const [arith] = recorded(run.run.logPath, 1, 1);
      const base = await backend.createSamplingSession({ baseModel: 'tiny-qwen3' });
      const response = await base.sample(teacherForcedInput(arith), 1, { max_tokens: 1 }, { includePromptLogprobs: true, topkPromptLogprobs: K });
      const n = arith.loss_fn_inputs.target_tokens.shape![0];
      const top = response.topk_prompt_logprobs!.slice(-n).flatMap((row) => row!.map(([tok]) => tok));
      expect(arith.loss_fn_inputs.target_tokens.data).toEqual(top);
    } finally {
      await backend.close();
    }
  }, 180_000);
});

describe('off-policy distillation under crashes', () => {
  it('a worker killed in a teacher pass, then an engine restart: equal to an uninterrupted run, recorded teacher passes not redone', async () => {
    const path = config('crash');
    const worker0 = await workerProcess(stack, 'worker-opd-clean');
    let worker = worker0;
    try {
      const clean = testRun(stack, path, [], 'distill_off_policy');
      const cleanResult = await runToEnd(stack, clean);

      const crashed = testRun(stack, path, [], 'distill_off_policy');
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await waitUntil('step 1', async () => (await handle.query(progressQuery)).step >= 1, 120_000, 20);
      await untilActivityRunning(handle, 'offPolicyTeacherTargets');
      await worker.kill();
      worker = await workerProcess(stack, 'worker-opd-2');
      // After the checkpoint of step 2 and before the next: steps 3.. are replayed from it.
      await waitUntil('step 4', async () => (await handle.query(progressQuery)).step >= 4, 120_000, 20);
      const restartedAt = Date.now();
      await stack.restartEngine();
      const crashedResult = (await handle.result()) as RunResult;

      expect(crashedResult.status).toBe('completed');
      expect(crashedResult.recoveries).toBeGreaterThanOrEqual(1);
      await expectSameTraining(runEnd(crashed, crashedResult), runEnd(clean, cleanResult));
      // The replayed steps (3 and on, up to where the restart came) trained on the targets recorded
      // before the restart: their files were not written again.
      const dir = join(crashed.run.logPath, '.cookbook', 'store', 'teacher_targets');
      const steps = readdirSync(dir).sort();
      expect(steps).toHaveLength(6);
      const before = steps.filter((s) => statSync(join(dir, s, 'domain_000.json')).mtimeMs < restartedAt);
      expect(before.length).toBeGreaterThanOrEqual(4);
    } finally {
      await worker.stop();
    }
  }, 300_000);
});
