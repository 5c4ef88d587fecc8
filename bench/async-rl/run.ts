// bench/async-rl: synchronous vs off-policy RL over the same number of steps, on a workload with
// long-tail generation lengths — a briefly fine-tuned tiny model on arithmetic, which stops after
// a token or two on some prompts and rambles to max_tokens on others. Prints wall-clock per mode,
// the sync/async ratio (goal ≥ 1.3 at max_steps_off_policy 1–2) and the largest staleness seen.
// The engine batches concurrent sample requests (--continuous-batching), as a serving sampler does.
//   npm run bench:async-rl [-- --steps 8 --off-policy 1,2 --rounds 2 --set temperature=1.5 …]
// (--set: config overrides for every RL run, e.g. a longer tail with temperature and max_tokens)
// A shared machine's speed drifts by more than the effect measured, so the modes run in rounds
// (sync, then each async setting; the order reversed every other round) and each round gives its
// own ratios; the summary is the geometric mean over rounds.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { metricsOf } from '../../test/support/runs.js';
import { startTestStack, testRun, withWorker } from '../../test/support/stack.js';

const { values } = parseArgs({
  options: { steps: { type: 'string', default: '8' }, 'off-policy': { type: 'string', default: '1,2' }, rounds: { type: 'string', default: '2' }, set: { type: 'string', multiple: true, default: [] } },
});
const here = import.meta.dirname;
const steps = Number(values.steps);
const offPolicy = values['off-policy']!.split(',').map(Number);
const rounds = Number(values.rounds);
const GROUPS_PER_BATCH = 8;

const stack = await startTestStack({ engineArgs: ['--continuous-batching'] });
try {
  await withWorker(stack, async () => {
    const sft = testRun(stack, join(here, 'sft.json'));
    const warm = (await (await startRun(stack.client, sft, stack.taskQueue)).result()) as RunResult;
    const start = [`load_checkpoint_path=${warm.finalCheckpoint!.statePath}`, `max_steps=${steps}`, ...values.set!];

    async function timed(overrides: string[]) {
      const run = testRun(stack, join(here, 'rl.json'), [...start, ...overrides], 'rl');
      const t0 = performance.now();
      await (await startRun(stack.client, run, stack.taskQueue)).result();
      const seconds = (performance.now() - t0) / 1000;
      const rows = metricsOf(run.run.logPath);
      const staleness = Math.max(0, ...rows.map((r) => (r.step as number) - ((r['sampling_client/step_min'] as number | undefined) ?? (r.step as number))));
      const tokens = rows.map((r) => r['env/all/ac_tokens_per_turn'] as number);
      return { seconds, staleness, meanTokens: tokens.reduce((a, b) => a + b, 0) / tokens.length };
    }

    await timed(['max_steps=1']); // untimed warm-up: code paths, tokenizer, engine caches
    const modes = [{ label: 'sync', off: null as number | null }, ...offPolicy.map((off) => ({ label: `async max_steps_off_policy=${off}`, off }))];
    const ratios = new Map<number, number[]>(offPolicy.map((off) => [off, []]));
    let maxStaleness = 0;
    for (let round = 0; round < rounds; round++) {
      const seconds = new Map<number | null, number>();
      for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) {
        const overrides = mode.off === null ? [] : [`async_config={"max_steps_off_policy":${mode.off},"groups_per_batch":${GROUPS_PER_BATCH},"loss_fn":"importance_sampling"}`];
        const r = await timed(overrides);
        seconds.set(mode.off, r.seconds);
        maxStaleness = Math.max(maxStaleness, r.staleness);
        console.log(`round ${round + 1} ${mode.label}: ${r.seconds.toFixed(1)} s for ${steps} steps, mean action tokens ${r.meanTokens.toFixed(1)}, largest staleness ${r.staleness}`);
      }
      for (const off of offPolicy) {
        const ratio = seconds.get(null)! / seconds.get(off)!;
        ratios.get(off)!.push(ratio);
        console.log(`round ${round + 1} ratio sync/async (max_steps_off_policy=${off}): ${ratio.toFixed(2)}`);
      }
    }
    for (const off of offPolicy) {
      const rs = ratios.get(off)!;
      const geomean = Math.exp(rs.reduce((a, r) => a + Math.log(r), 0) / rs.length);
      console.log(`ratio sync/async (max_steps_off_policy=${off}): ${geomean.toFixed(2)} (rounds: ${rs.map((r) => r.toFixed(2)).join(', ')})`);
    }
    console.log(`largest staleness observed: ${maxStaleness}`);
  });
} finally {
  await stack.stop();
}
