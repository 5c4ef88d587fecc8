// The `cookbook` CLI end to end, as a user runs it (no TTY), against the real stack.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Service } from '../../src/cli/services.js';
import { cookbookOn as cookbook } from '../support/cli.js';
import { startTestStack, waitUntil, workerProcess, type TestStack } from '../support/stack.js';

const root = join(import.meta.dirname, '..', '..');
const config = join(root, 'test', 'fixtures', 'sl_small.json');

describe('cookbook CLI', () => {
  let stack: TestStack;
  let worker: Service;
  beforeAll(async () => {
    stack = await startTestStack();
    worker = await workerProcess(stack);
  });
  afterAll(async () => {
    await worker?.stop();
    await stack?.stop();
  });

  it('train --wait prints the resolved config, the workflow id, plain progress lines and final metrics', async () => {
    const r = await cookbook(stack, ['train', 'sl', config, 'num_epochs=1', 'run_name=cli', '--wait', '--id', 'sl-cli-wait']);
    expect(r.err).not.toMatch(/error/i); // warnings (e.g. about the renderer) may appear
    expect(r.code).toBe(0);
    expect(r.out).toContain('"model_name": "tiny-qwen3"');
    expect(r.out).toContain('"num_epochs": 1');
    expect(r.out).toContain('started sl-cli-wait');
    expect(r.out).toMatch(/step 5\/5 · \[#+\] · 100%/);
    expect(r.out).toMatch(/completed after 5 steps/);
    expect(r.out).toMatch(/train_mean_nll\s+\d+\.\d{6}/);

    const runs = await cookbook(stack, ['runs']);
    expect(runs.out).toMatch(/sl-cli-wait\s+sl\s+tiny-qwen3\s+5\s+completed\s+COMPLETED/);
    const status = await cookbook(stack, ['status', 'sl-cli-wait']);
    expect(status.out).toContain('sl-cli-wait: COMPLETED');
    expect(status.out).toMatch(/final checkpoint tinker:\/\//);
  });

  it('set, pause, resume, status and stop drive a running run', async () => {
    const started = await cookbook(stack, ['train', 'sl', config, 'num_epochs=30', '--id', 'sl-cli-ctl']);
    expect(started.code).toBe(0);
    await waitUntil('the run has stepped', async () => (await cookbook(stack, ['status', 'sl-cli-ctl'])).out.match(/step [1-9]\d*\//) !== null);

    const set = await cookbook(stack, ['set', 'sl-cli-ctl', 'lr_multiplier=0.5', 'eval_every=0']);
    expect(set.out).toMatch(/hot settings now \{"lr_multiplier":0.5,"eval_every":0,"save_every":4\}, from step \d+/);
    const badSet = await cookbook(stack, ['set', 'sl-cli-ctl', 'lr_multiplier=-2']);
    expect(badSet.code).not.toBe(0);
    expect(badSet.err).toContain('lr_multiplier must be > 0');

    expect((await cookbook(stack, ['pause', 'sl-cli-ctl'])).out).toContain('paused');
    await waitUntil('paused', async () => (await cookbook(stack, ['status', 'sl-cli-ctl'])).out.includes('status paused'));
    expect((await cookbook(stack, ['resume', 'sl-cli-ctl'])).out).toContain('resumed');
    expect((await cookbook(stack, ['stop', 'sl-cli-ctl'])).out).toContain('stop requested');

    const watched = await cookbook(stack, ['watch', 'sl-cli-ctl']);
    expect(watched.code).toBe(0);
    expect(watched.out).toMatch(/stopped after \d+ steps/);
  });

  it('errors name the problem and exit non-zero', async () => {
    const badKey = await cookbook(stack, ['train', 'sl', config, 'learning_rat=1']);
    expect(badKey.code).toBe(2);
    expect(badKey.err).toContain('unknown config key learning_rat');
    const badModel = await cookbook(stack, ['train', 'sl', config, 'model_name=no-such-model']);
    expect(badModel.code).toBe(2);
    expect(badModel.err).toMatch(/model_name: no-such-model is not served by .* \(served: .*tiny-qwen3/);
    const unknownRun = await cookbook(stack, ['status', 'sl-does-not-exist']);
    expect(unknownRun.code).toBe(1);
    expect(unknownRun.err).toContain('no run with workflow id "sl-does-not-exist"');
  });
});
