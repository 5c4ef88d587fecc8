// A rollout hook on the real stack (Temporal dev server, the engine over HTTP, the tiny model's real
// tokenizer): guess the number with `nudge_on_length` selected by name in the config. Turns cut at
// max_tokens get the nudge injected before the next turn, and a worker killed during step 1's
// episodes is replaced with a run equal to the uninterrupted one — the hook decides from the
// rollout's own transitions, so the retried rollout injects exactly what the first one did.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, workerProcess, type TestStack } from '../support/stack.js';

const fixture = join(import.meta.dirname, '..', 'fixtures', 'rl_guess_number_nudge_small.json');
const summariesText = (logPath: string, step: number) => readFileSync(join(logPath, `iteration_${String(step).padStart(6, '0')}`, 'train_rollout_summaries.jsonl'), 'utf8');

describe('rollout hooks on the real stack', { timeout: 900_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('nudge_on_length: truncated turns are nudged, and a worker killed mid-episode leaves the uninterrupted run', async () => {
    const clean = testRun(stack, fixture, [], 'rl');
    const crashed = testRun(stack, fixture, [], 'rl');
    let w = await workerProcess(stack, 'hooks-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      expect(cleanResult.status).toBe('completed');
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await waitUntil('step 1', async () => (await handle.query(progressQuery)).step >= 1, 300_000, 50);
      await untilActivityRunning(handle, 'rlRolloutGroup'); // into step 1's episodes
      await w.kill();
      w = await workerProcess(stack, 'hooks-2');
      const crashedResult = (await handle.result()) as RunResult;
      expect(crashedResult.status).toBe('completed');
      expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.run.logPath));
      expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
      for (const step of [0, 1, 2]) expect(summariesText(crashed.run.logPath, step)).toBe(summariesText(clean.run.logPath, step));
      expect(await weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!)).toBe(
        await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
      );
    } finally {
      await w.stop();
    }
    // With 3-token turns the tiny model's guesses are cut and the episode goes on (guess the number
    // continues past a cut turn): those are the turns the hook nudged (the unit tests pin the nudge).
    const continuedCuts = [0, 1, 2].flatMap((step) =>
      summariesText(clean.run.logPath, step).trim().split('\n').map((l) => JSON.parse(l).steps.at(-1).metrics.num_truncations_max_turn_tokens ?? 0),
    );
    expect(Math.max(...continuedCuts)).toBeGreaterThan(0);
  });
});
