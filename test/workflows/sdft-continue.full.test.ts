// `cookbook continue` for SDFT, as the reference's resume (the last checkpoint's weights and
// optimizer, a fresh base-model teacher): a 1-step run continued to 2 steps equals an uninterrupted
// 2-step run in metrics rows, checkpoints.jsonl and final weights.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveContinuation } from '../../src/cli/continue.js';
import { startRun, type ResolvedRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const fixture = join(import.meta.dirname, '..', 'fixtures', 'sdft_small.json');

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

const runAll = (runs: ResolvedRun[]) =>
  withWorker(stack, async () => {
    const results: RunResult[] = [];
    for (const r of runs) results.push((await (await startRun(stack.client, r, stack.taskQueue)).result()) as RunResult);
    return results;
  });

describe('continuing an SDFT run', () => {
  it('1 step continued to 2 equals an uninterrupted 2-step run', async () => {
    const clean = testRun(stack, fixture, ['save_every=0'], 'sdft');
    const parent = testRun(stack, fixture, ['save_every=0', 'max_steps=1'], 'sdft');
    const [cleanResult, parentResult] = await runAll([clean, parent]);
    expect([cleanResult.steps, parentResult.steps]).toEqual([2, 1]);
    const id = `continued-sdft-${Date.now()}`;
    const child = resolveContinuation(parent.run.logPath, ['max_steps=2', `log_path=${join(stack.dir, 'runs', id)}`], { workflowId: id });
    expect(child.config.continue_from).toMatchObject({ name: 'final', next_step: 1 });
    const [childResult] = await runAll([child]);
    expect(childResult).toMatchObject({ status: 'completed', steps: 2 });
    expect(metricsOf(child.run.logPath)).toEqual(metricsOf(clean.run.logPath).slice(1));
    expect(checkpointsOf(child.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
    const [a, b] = await Promise.all([cleanResult, childResult].map((r) => weightsFingerprint(stack.engine.baseUrl, r.finalCheckpoint!.samplerPath!)));
    expect(b).toBe(a);
  }, 300_000);
});
