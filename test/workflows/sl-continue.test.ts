// `cookbook continue` on the real stack: a run trained for N steps and continued to 2N (optimizer
// state included) equals one uninterrupted 2N-step run, in metrics and final weights, also when
// the continued run's worker is SIGKILLed; a starting checkpoint whose recorded renderer, base
// model or LoRA rank differ from the config is refused naming the key.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastStateCheckpoint, resolveContinuation } from '../../src/cli/continue.js';
import { startRun } from '../../src/cli/train.js';
import { ConfigError } from '../../src/cookbook/config/overrides.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');
// A constant schedule: the parent's N steps then see the learning rates of the first N of 2N.
const constant = ['lr_schedule=constant'];

describe('continuing a supervised run', () => {
  let stack: TestStack;
  let n = 0;
  const childOf = (parentLogPath: string, overrides: string[]) => {
    const id = `sl-continued-${Date.now()}-${++n}`;
    return resolveContinuation(parentLogPath, [...overrides, `log_path=${join(stack.dir, 'runs', id)}`], { workflowId: id });
  };

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('N steps, continued to 2N (also through a worker kill), equal an uninterrupted 2N-step run', async () => {
    const clean = testRun(stack, config, [...constant, 'num_epochs=2']);
    const parent = testRun(stack, config, [...constant, 'num_epochs=1']);
    let worker = await workerProcess(stack, 'worker-continue');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      const parentResult = (await (await startRun(stack.client, parent, stack.taskQueue)).result()) as RunResult;
      expect(cleanResult.steps).toBe(10);
      expect(parentResult.steps).toBe(5);

      // Every row records what the checkpoint was trained with and where a continuation starts.
      const final = lastStateCheckpoint(parent.run.logPath)!;
      expect(final).toMatchObject({ name: 'final', epoch: 1, batch: 0, next_step: 5, renderer_name: 'qwen3', base_model: 'tiny-qwen3', tokenizer: 'tiny-qwen3', lora_rank: 8 });

      const child = childOf(parent.run.logPath, ['num_epochs=2']);
      expect(child.config.continue_from).toMatchObject({ log_path: parent.run.logPath, workflow_id: parent.workflowId, name: 'final', next_step: 5 });
      expect(child.config.load_checkpoint_path).toBe(final.state_path);
      const childResult = (await (await startRun(stack.client, child, stack.taskQueue)).result()) as RunResult;

      const killed = childOf(parent.run.logPath, ['num_epochs=2']);
      const handle = await startRun(stack.client, killed, stack.taskQueue);
      await waitUntil('step 7', async () => (await handle.query(progressQuery)).step >= 7, 120_000, 50);
      await worker.kill();
      worker = await workerProcess(stack, 'worker-continue-2');
      const killedResult = (await handle.result()) as RunResult;

      const cleanRows = metricsOf(clean.run.logPath);
      for (const [run, result] of [[child, childResult], [killed, killedResult]] as const) {
        expect(result.status).toBe('completed');
        expect(result.steps).toBe(10);
        // The continued run's own files hold steps 5..9: the rows of the uninterrupted run's second half.
        expect(metricsOf(run.run.logPath)).toEqual(cleanRows.slice(5));
        expect(checkpointsOf(run.run.logPath)).toEqual(checkpointsOf(clean.run.logPath).filter((c) => c.name !== '000004'));
        expect(await weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!)).toBe(
          await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
        );
      }
      // The parent's files are untouched.
      expect(metricsOf(parent.run.logPath).map((r) => r.step)).toEqual([0, 1, 2, 3, 4]);
    } finally {
      await worker.stop();
    }
  }, 900_000);

  it('load_checkpoint_with_optimizer brings the Adam moments: a new run from the same state trains differently without them', async () => {
    const source = testRun(stack, config, [...constant, 'num_epochs=1', 'max_steps=2', 'eval_every=0']);
    const [withOpt, without] = await withWorker(stack, async () => {
      const src = (await (await startRun(stack.client, source, stack.taskQueue)).result()) as RunResult;
      const path = src.finalCheckpoint!.statePath;
      const short = [...constant, 'num_epochs=1', 'max_steps=2', 'eval_every=0', `load_checkpoint_path=${path}`];
      const runs = [testRun(stack, config, [...short, 'load_checkpoint_with_optimizer=true']), testRun(stack, config, short)];
      for (const r of runs) await (await startRun(stack.client, r, stack.taskQueue)).result();
      return runs;
    });
    const a = metricsOf(withOpt.run.logPath);
    const b = metricsOf(without.run.logPath);
    // Same weights before step 0 (same pre-step loss), different first update (Adam's moments and step count).
    expect(a[0].train_mean_nll).toBe(b[0].train_mean_nll);
    expect(a[1].train_mean_nll).not.toBe(b[1].train_mean_nll);
    expect(a.map((r) => r.step)).toEqual([0, 1]);
  }, 600_000);

  it('a conflicting renderer, LoRA rank or model is refused naming the config key; check_checkpoint_metadata=false overrides', async () => {
    const parent = testRun(stack, config, [...constant, 'num_epochs=1', 'max_steps=2', 'eval_every=0']);
    await withWorker(stack, async () => (await startRun(stack.client, parent, stack.taskQueue)).result());
    const refused = (overrides: string[]) => {
      try {
        childOf(parent.run.logPath, overrides);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('not refused');
    };
    expect(refused(['max_steps=4', 'lora_rank=4'])).toMatch(/^lora_rank: checkpoint "final" of .* was trained with lora_rank 8 but this run's config gives 4/);
    expect(refused(['max_steps=4', 'renderer_name=llama3'])).toMatch(/^renderer_name: .*"qwen3".*"llama3"/);
    expect(refused(['max_steps=4', 'load_checkpoint_path=tinker://x/weights/y'])).toMatch(/^load_checkpoint_path: set by `cookbook continue`/);
    expect(childOf(parent.run.logPath, ['max_steps=4', 'lora_rank=4', 'check_checkpoint_metadata=false']).config.lora_rank).toBe(4);

    // load_checkpoint_path into a new run: the worker compares the weights' own base model and rank.
    const state = lastStateCheckpoint(parent.run.logPath)!.state_path!;
    const mismatched = testRun(stack, config, ['num_epochs=1', 'lora_rank=4', `load_checkpoint_path=${state}`]);
    const failure = await withWorker(stack, async () => (await startRun(stack.client, mismatched, stack.taskQueue)).result().catch((e: Error) => e));
    expect(String((failure as { cause?: { cause?: { message?: string } } }).cause?.cause?.message ?? failure)).toMatch(/lora_rank: load_checkpoint_path .* was trained with lora_rank 8 but this run's config gives 4/);
    expect(new RunStore(mismatched.run.logPath).readCheckpoints()).toEqual([]);
  }, 600_000);
});
