// bench/async-rl: synchronous vs off-policy RL over the same number of steps, on a workload with
// long-tail generation lengths — a briefly fine-tuned tiny model on arithmetic, which stops after
// a token or two on some prompts and rambles to max_tokens on others. Prints wall-clock per mode,
// the sync/async ratio (goal ≥ 1.3 at max_steps_off_policy 1–2) and the largest staleness seen.
//   npm run bench:async-rl [-- --steps 8 --off-policy 1,2]
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { metricsOf } from '../../test/support/runs.js';
import { startTestStack, testRun, withWorker } from '../../test/support/stack.js';

const { values } = parseArgs({ options: { steps: { type: 'string', default: '8' }, 'off-policy': { type: 'string', default: '1,2' } } });
const here = import.meta.dirname;
const steps = Number(values.steps);

const stack = await startTestStack();
try {
  await withWorker(stack, async () => {
    const sft = testRun(stack, join(here, 'sft.json'));
    const warm = (await (await startRun(stack.client, sft, stack.taskQueue)).result()) as RunResult;
    const start = [`load_checkpoint_path=${warm.finalCheckpoint!.statePath}`, `max_steps=${steps}`];

    async function timed(overrides: string[]) {
      const run = testRun(stack, join(here, 'rl.json'), [...start, ...overrides], 'rl');
      const t0 = performance.now();
      await (await startRun(stack.client, run, stack.taskQueue)).result();
      const seconds = (performance.now() - t0) / 1000;
      const rows = metricsOf(run.run.logPath);
      const staleness = Math.max(0, ...rows.map((r) => (r.step as number) - ((r['sampling_client/step_min'] as number | undefined) ?? (r.step as number))));
      const lengths = rows.map((r) => r['env/all/ac_tokens_per_turn'] as number);
      return { seconds, staleness, lengths };
    }

    // Untimed warm-up (code paths, tokenizer, engine caches), then sync both before and after the
    // async runs, so neither mode profits from going second; the ratio uses the mean sync time.
    await timed(['max_steps=1']);
    const syncBefore = await timed([]);
    console.log(`sync:  ${syncBefore.seconds.toFixed(1)} s for ${steps} steps (mean action tokens per step ${syncBefore.lengths.map((l) => l.toFixed(1)).join(' ')})`);
    const asyncRuns: Array<{ off: number; seconds: number; staleness: number }> = [];
    for (const off of values['off-policy']!.split(',').map(Number)) {
      const groups = 8;
      const async = await timed([`async_config={"max_steps_off_policy":${off},"groups_per_batch":${groups}}`]);
      console.log(`async max_steps_off_policy=${off}: ${async.seconds.toFixed(1)} s, largest staleness observed ${async.staleness}`);
      asyncRuns.push({ off, ...async });
    }
    const syncAfter = await timed([]);
    const sync = (syncBefore.seconds + syncAfter.seconds) / 2;
    console.log(`sync again: ${syncAfter.seconds.toFixed(1)} s (mean sync ${sync.toFixed(1)} s)`);
    for (const { off, seconds, staleness } of asyncRuns) {
      console.log(`ratio sync/async (max_steps_off_policy=${off}): ${(sync / seconds).toFixed(2)}  (largest staleness ${staleness})`);
    }
  });
} finally {
  await stack.stop();
}
