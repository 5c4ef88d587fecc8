// `cookbook continue` and `cookbook track` end to end, as a user runs them, against the real stack:
// a finished run continued by workflow id with a new num_epochs; a refused override naming its key;
// a DPO run continued on its parent's reference weights;
// a run tracked offline (WANDB_MODE=offline in the worker's environment) leaves a W&B offline run.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerProcess, type Service } from '../../src/cli/services.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { cookbookOn as cookbook } from '../support/cli.js';
import { startTestStack, type TestStack } from '../support/stack.js';

const root = join(import.meta.dirname, '..', '..');
const config = join(root, 'test', 'fixtures', 'sl_small.json');

describe('cookbook continue / track', () => {
  let stack: TestStack;
  let worker: Service;
  beforeAll(async () => {
    stack = await startTestStack();
    worker = await startWorkerProcess({
      temporalAddress: stack.temporalAddress,
      tinkerBaseUrl: stack.engine.baseUrl,
      taskQueue: stack.taskQueue,
      logFile: join(stack.dir, 'worker.log'),
      env: { TINKER_API_KEY: 'tml-test', WANDB_MODE: 'offline' },
    });
  });
  afterAll(async () => {
    await worker?.stop();
    await stack?.stop();
  });

  it('continues a finished run by id from its final checkpoint, in its own log dir, tracked offline', async () => {
    const parent = await cookbook(stack, ['train', 'sl', config, 'num_epochs=1', 'lr_schedule=constant', 'wandb_project=cli-tests', '--wait', '--id', 'sl-cli-parent']);
    expect(parent.code, parent.err).toBe(0);

    const refused = await cookbook(stack, ['continue', 'sl-cli-parent', 'num_epochs=2', 'lora_rank=4']);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/error: lora_rank: checkpoint "final" of .*sl-cli-parent was trained with lora_rank 8 but this run's config gives 4/);

    const child = await cookbook(stack, ['continue', 'sl-cli-parent', 'num_epochs=2', '--wait', '--id', 'sl-cli-child']);
    expect(child.code, child.err).toBe(0);
    expect(child.out).toContain('started sl-cli-child (continues sl-cli-parent from checkpoint final, step 5)');
    expect(child.out).toMatch(/completed after 10 steps/);
    const childDir = join(stack.dir, 'runs', 'sl-cli-child');
    const saved = JSON.parse(readFileSync(join(childDir, 'config.json'), 'utf8'));
    expect(saved.continue_from).toMatchObject({ log_path: join(stack.dir, 'runs', 'sl-cli-parent'), workflow_id: 'sl-cli-parent', name: 'final', next_step: 5 });
    expect(saved.load_checkpoint_with_optimizer).toBe(true);
    expect(new RunStore(childDir).readMetrics().map((r) => r.step)).toEqual([5, 6, 7, 8, 9]);

    // Both runs tracked offline by the worker; `track` reports where a run is mirrored.
    for (const dir of [join(stack.dir, 'runs', 'sl-cli-parent'), childDir]) expect(readdirSync(join(dir, 'wandb'))[0]).toMatch(/^offline-run-\d{8}_\d{6}-[0-9a-z]{8}$/);
    const track = await cookbook(stack, ['track', childDir]);
    expect(track.code, track.err).toBe(0);
    expect(track.out).toMatch(/mirrored to .*sl-cli-child\/wandb\/offline-run-/);
  }, 600_000);

  it('continues a DPO run on its parent\'s reference; refusals still name the config key', async () => {
    const dpoConfig = join(root, 'test', 'fixtures', 'dpo_small.json');
    const parent = await cookbook(stack, ['train', 'dpo', dpoConfig, 'max_steps=2', 'eval_every=0', '--wait', '--id', 'dpo-cli-parent']);
    expect(parent.code, parent.err).toBe(0);

    const refused = await cookbook(stack, ['continue', 'dpo-cli-parent', 'max_steps=4', 'continue_from.next_step=0']);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/error: continue_from: set by `cookbook continue` from the parent's checkpoint/);
    const badRank = await cookbook(stack, ['continue', 'dpo-cli-parent', 'max_steps=4', 'lora_rank=4']);
    expect(badRank.code).toBe(2);
    expect(badRank.err).toMatch(/error: lora_rank: checkpoint "final" of .*dpo-cli-parent was trained with lora_rank 8/);

    const child = await cookbook(stack, ['continue', 'dpo-cli-parent', 'max_steps=4', '--wait', '--id', 'dpo-cli-child']);
    expect(child.code, child.err).toBe(0);
    expect(child.out).toContain('started dpo-cli-child (continues dpo-cli-parent from checkpoint final, step 2)');
    expect(child.out).toMatch(/completed after 4 steps/);
    const parentRows = new RunStore(join(stack.dir, 'runs', 'dpo-cli-parent')).readCheckpoints();
    const saved = JSON.parse(readFileSync(join(stack.dir, 'runs', 'dpo-cli-child', 'config.json'), 'utf8'));
    expect(saved.continue_from.resume_state).toEqual(parentRows.at(-1)!.resume_state);
    expect(saved.continue_from.resume_state.reference_path).toMatch(/^tinker:\/\//);
    expect(new RunStore(join(stack.dir, 'runs', 'dpo-cli-child')).readMetrics().map((r) => r.step)).toEqual([2, 3]);
  }, 600_000);
});
