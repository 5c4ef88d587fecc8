// The reference SL loop's further periodic-checkpoint triggers and its infrequent evaluators, on
// the real stack: `save_every_tokens` (which steps get checkpoints, by the reference's rule applied
// to the run's own token counts, and their rows), `save_every_seconds` (workflow time), and
// `async_periodic_saves` (a save beside the next steps holds exactly the steps its row names, and a
// worker kill and an engine restart around one leave the rows and weights of an uninterrupted run).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, timingProblems, weightsFingerprint } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');
// One epoch of 5 steps; no evals in the way of pipelining unless a test asks for them.
const small = ['num_epochs=1', 'eval_every=0'];

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ own: true });
});
afterAll(async () => {
  await stack?.stop();
});

/**
 * The reference's CheckpointManager on a run's token counts (`should_save_periodic`): after step
 * `step` > 0, a checkpoint when the elapsed tokens grew by `every` since the last one.
 */
function tokenCheckpoints(rows: Array<Record<string, unknown>>, every: number): Array<{ step: number; elapsed: number }> {
  const due: Array<{ step: number; elapsed: number }> = [];
  let elapsed = 0;
  let saved = 0;
  for (const row of rows) {
    elapsed += row.num_tokens as number;
    if ((row.step as number) > 0 && elapsed - saved >= every) {
      due.push({ step: row.step as number, elapsed });
      saved = elapsed;
    }
  }
  return due;
}

const fingerprintOf = (logPath: string, name: string) => {
  const row = new RunStore(logPath).readCheckpoints().find((r) => r.name === name);
  return weightsFingerprint(stack.engine.baseUrl, row!.sampler_path as string);
};

describe('SL save triggers', () => {
  it('save_every_tokens checkpoints after the steps the reference would, rows naming them; a day of save_every_seconds adds none to save_every', async () => {
    await withWorker(stack, async () => {
      // A day never passes here: only the step cadence saves.
      const probeRun = testRun(stack, config, [...small, 'save_every=2', 'save_every_seconds=86400']);
      await runToEnd(stack, probeRun);
      expect(checkpointsOf(probeRun.run.logPath).map((r) => r.name)).toEqual(['000002', '000004', 'final']);
      const perStep = metricsOf(probeRun.run.logPath).map((r) => r.num_tokens as number);
      // About 1.5 steps' worth: some steps trigger, some do not.
      const every = Math.round(1.5 * (perStep.reduce((a, b) => a + b, 0) / perStep.length));

      const run = testRun(stack, config, [...small, 'save_every=0', `save_every_tokens=${every}`]);
      const result = await runToEnd(stack, run);
      expect(result.status).toBe('completed');
      const expected = tokenCheckpoints(metricsOf(run.run.logPath), every);
      expect(expected.length).toBeGreaterThan(0);
      expect(expected.length).toBeLessThan(perStep.length - 1);
      expect(checkpointsOf(run.run.logPath)).toEqual([
        ...expected.map(({ step, elapsed }) => ({ name: String(step).padStart(6, '0'), epoch: 0, batch: step, elapsed_tokens: elapsed })),
        { name: 'final', epoch: 1, batch: 0, elapsed_tokens: perStep.reduce((a, b) => a + b, 0) },
      ]);
      // Training is unchanged by where checkpoints fall.
      expect(metricsOf(run.run.logPath)).toEqual(metricsOf(probeRun.run.logPath));
    });
  }, 300_000);

  // The fuller tier: the gate's token test already shows a day of seconds adding nothing.
  if (fullTier) it('save_every_seconds checkpoints once the seconds passed since the last save (workflow time)', async () => {
    await withWorker(stack, async () => {
      // Any step takes longer than a millisecond: every step but 0 (as the reference) is due.
      const often = testRun(stack, config, [...small, 'max_steps=3', 'save_every=0', 'save_every_seconds=0.001']);
      await runToEnd(stack, often);
      expect(checkpointsOf(often.run.logPath).map((r) => r.name)).toEqual(['000001', '000002', 'final']);
    });
  }, 300_000);

  it('infrequent evaluators run before every infrequent_eval_every-th step, their keys beside the others', async () => {
    await withWorker(stack, async () => {
      // Two examples keep the sampling short.
      const probe = join(stack.dir, 'rare_eval.jsonl');
      writeFileSync(probe, ['What is 2 + 2?', 'Name a colour.'].map((input) => JSON.stringify({ input, output: 'e' })).join('\n') + '\n');
      const entry = { kind: 'custom_sampling', name: 'rare', file_path: probe, max_tokens: 8 };
      const run = testRun(stack, config, ['num_epochs=1', 'max_steps=4', 'eval_every=3', 'infrequent_eval_every=2', `infrequent_evaluators=${JSON.stringify([entry])}`]);
      const result = await runToEnd(stack, run);
      expect(result.status).toBe('completed');
      const rows = metricsOf(run.run.logPath);
      expect(rows.filter((r) => 'rare/accuracy' in r).map((r) => r.step)).toEqual([0, 2]);
      expect(rows.filter((r) => 'test/nll' in r).map((r) => r.step)).toEqual([0, 3]);
      for (const r of rows.filter((r) => 'rare/accuracy' in r)) expect(r['rare/accuracy']).toBeGreaterThanOrEqual(0);
    });
  }, 300_000);
});

describe('SL async periodic saves', () => {
  // A save after every step but 0, each beside the next step.
  const overrides = [...small, 'save_every=1', 'async_periodic_saves=true'];
  let clean: { logPath: string; result: RunResult } | undefined;

  it('a save beside the next steps holds the steps its row names: rows and weights equal to blocking saves', async () => {
    await withWorker(stack, async () => {
      const blocking = testRun(stack, config, overrides.filter((o) => !o.startsWith('async_periodic_saves')));
      const async = testRun(stack, config, overrides);
      await runToEnd(stack, blocking);
      clean = { logPath: async.run.logPath, result: await runToEnd(stack, async) };
      const names = ['000001', '000002', '000003', '000004', 'final'];
      expect(checkpointsOf(async.run.logPath).map((r) => r.name)).toEqual(names);
      expect(checkpointsOf(async.run.logPath)).toEqual(checkpointsOf(blocking.run.logPath));
      expect(metricsOf(async.run.logPath)).toEqual(metricsOf(blocking.run.logPath));
      expect(timingProblems(async.run.logPath, [0, 1, 2, 3, 4], { total: false })).toEqual([]);
      for (const name of names) expect([name, await fingerprintOf(async.run.logPath, name)]).toEqual([name, await fingerprintOf(blocking.run.logPath, name)]);
    });
  }, 300_000);

  it('a worker killed and an engine restarted around a save leave the rows and weights of an uninterrupted run', async () => {
    if (!clean) throw new Error('needs the uninterrupted run of the test before');
    const crashed = testRun(stack, config, overrides);
    let worker = await workerProcess(stack, 'worker-async');
    try {
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      // Step 1 done: its checkpoint is being saved beside step 2.
      await waitUntil('step 2', async () => (await handle.query(progressQuery)).step >= 2, 120_000, 20);
      await worker.kill();
      worker = await workerProcess(stack, 'worker-async-2');
      // Step 3 done: its checkpoint is being saved beside step 4 when the engine loses the model.
      await waitUntil('step 4', async () => (await handle.query(progressQuery)).step >= 4, 120_000, 20);
      await stack.restartEngine();
      const result = (await handle.result()) as RunResult;
      expect(result.status).toBe('completed');
      expect(result.recoveries).toBeGreaterThanOrEqual(1);
      expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.logPath));
      expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.logPath));
      expect(timingProblems(crashed.run.logPath, [0, 1, 2, 3, 4], { total: false })).toEqual([]);
      expect(await weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!)).toBe(
        await weightsFingerprint(stack.engine.baseUrl, clean.result.finalCheckpoint!.samplerPath!),
      );
    } finally {
      await worker.stop();
    }
  }, 300_000);
});
