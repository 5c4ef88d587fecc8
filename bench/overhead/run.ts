// bench/overhead: the same N supervised steps driven by the workflow (Temporal dev server, worker,
// activities) and by a direct loop over the same client and engine. Both create the model, run N
// forward_backward + optim_step steps and save a final checkpoint. Prints the wall-clock ratio
// (goal ≤ 1.02 for steps of ≥ 0.5 s) and the milliseconds the workflow adds per step.
// Beside them, the workflow once more with its timing off (COOKBOOK_TIMING=off: no spans, no
// time/* keys, no timing_spans.jsonl), so the cost of timing, on by default, is its own ratio
// (goal < 1.01). The two workflow arms alternate their order from round to round. On a machine
// whose engine shares its cores with other work, step times vary by more than timing costs, so
// the bench also times timing's own work in the activities without the engine (timing-io.ts) and
// prints it as a share of the median step.
//   npm run bench:overhead [-- --steps 12 --batch 32 --max-length 256 --rounds 2]
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { createTinkerBackend } from '../../src/backends/index.js';
import { startRun } from '../../src/cli/train.js';
import type { SupervisedConfig } from '../../src/cookbook/config/sl.js';
import { lrMultiplier } from '../../src/cookbook/lr-schedule.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { buildChatDatasets } from '../../src/cookbook/supervised/dataset.js';
import { metricsOf } from '../../test/support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../../test/support/stack.js';
import { timingIoPerStep } from './timing-io.js';

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '12' },
    batch: { type: 'string', default: '32' },
    'max-length': { type: 'string', default: '256' },
    rounds: { type: 'string', default: '2' },
    model: { type: 'string', default: 'tiny-qwen3' },
  },
});
const steps = Number(values.steps);
const config = join(import.meta.dirname, '..', '..', 'configs', 'sl_demo.json');
const overrides = [
  `model_name=${values.model}`,
  `dataset.batch_size=${values.batch}`,
  `dataset.max_length=${values['max-length']}`,
  'dataset.test_size=0',
  `max_steps=${steps}`,
  // Enough epochs that max_steps, not the dataset, bounds the run (the direct loop cycles epochs too).
  'num_epochs=100',
  'eval_every=0',
  'save_every=0',
];

async function direct(stack: TestStack): Promise<number> {
  const cfg = testRun(stack, config, overrides).config as SupervisedConfig;
  const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-bench' });
  const { train } = await buildChatDatasets(cfg.dataset, cfg.model_name);
  // Batches are tokenized before the clock starts, as the worker's warm dataset cache has them.
  const nBatches = train.length;
  const batches = Array.from({ length: steps }, (_, step) => {
    train.setEpoch(Math.floor(step / nBatches));
    return train.getBatch(step % nBatches);
  });
  await backend.capabilities();
  const t0 = performance.now();
  const session = await backend.createTrainingSession({ baseModel: cfg.model_name, lora: { rank: cfg.lora_rank, seed: cfg.seed } });
  let seqId = 1;
  for (let step = 0; step < steps; step++) {
    const batch = batches[step];
    const lr = cfg.learning_rate * lrMultiplier(cfg.lr_schedule, step, steps);
    const fb = await session.forwardBackward(batch, 'cross_entropy', { seqId });
    seqId += fb.seqIds;
    const opt = await session.optimStep({ learning_rate: lr, beta1: cfg.adam_beta1, beta2: cfg.adam_beta2, eps: cfg.adam_eps }, { seqId });
    seqId += opt.seqIds;
    await Promise.all([fb.result(), opt.result()]);
  }
  const state = await session.saveState('final', { seqId: seqId++ });
  const sampler = await session.saveWeightsForSampler('final', { seqId: seqId++ });
  await Promise.all([state.result(), sampler.result()]);
  const ms = performance.now() - t0;
  await backend.close();
  return ms;
}

/** The workflow's run of the steps (timing on or off in the worker), checked to have trained every step and timed them or not. */
async function viaWorkflow(stack: TestStack, timing = true): Promise<number> {
  const run = testRun(stack, config, overrides);
  const saved = process.env.COOKBOOK_TIMING;
  // The in-process worker's activities read it at each call.
  if (!timing) process.env.COOKBOOK_TIMING = 'off';
  try {
    const ms = await withWorker(stack, async () => {
      const t0 = performance.now();
      await (await startRun(stack.client, run, stack.taskQueue)).result();
      return performance.now() - t0;
    });
    const rows = metricsOf(run.run.logPath);
    if (rows.length !== steps) throw new Error(`the workflow ran ${rows.length} steps, not ${steps}`);
    const timed = new RunStore(run.run.logPath).readTimingSpans().length;
    if (timed !== (timing ? steps : 0)) throw new Error(`timing ${timing ? 'on' : 'off'}: ${timed} timing rows for ${steps} steps`);
    return ms;
  } finally {
    if (saved === undefined) delete process.env.COOKBOOK_TIMING;
    else process.env.COOKBOOK_TIMING = saved;
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const stack = await startTestStack();
try {
  await direct(stack); // warm-up: tokenizer, dataset, engine caches, workflow bundle below
  await viaWorkflow(stack);
  const d: number[] = [];
  const w: number[] = [];
  const off: number[] = [];
  for (let round = 0; round < Number(values.rounds); round++) {
    d.push(await direct(stack));
    // Timing on first in even rounds, off first in odd ones: drift over the run favours neither.
    for (const timing of round % 2 === 0 ? [true, false] : [false, true]) (timing ? w : off).push(await viaWorkflow(stack, timing));
    console.log(
      `round ${round + 1}: direct ${(d[round] / 1000).toFixed(2)} s, workflow ${(w[round] / 1000).toFixed(2)} s (ratio ${(w[round] / d[round]).toFixed(3)}), ` +
        `timing off ${(off[round] / 1000).toFixed(2)} s (timing on / off ${(w[round] / off[round]).toFixed(3)})`,
    );
  }
  const dm = median(d);
  const wm = median(w);
  const om = median(off);
  console.log(`\nsteps ${steps}, batch ${values.batch} × max_length ${values['max-length']}, ${values.model}`);
  console.log(`direct loop:   ${(dm / steps).toFixed(1)} ms/step (incl. model creation and final save)`);
  console.log(`workflow:      ${(wm / steps).toFixed(1)} ms/step`);
  console.log(`added per step by the workflow: ${((wm - dm) / steps).toFixed(1)} ms`);
  console.log(`wall-clock ratio workflow / direct: ${(wm / dm).toFixed(3)}`);
  console.log(`workflow with timing off: ${(om / steps).toFixed(1)} ms/step; timing adds ${((wm - om) / steps).toFixed(1)} ms per step`);
  console.log(`wall-clock ratio timing on / off: ${(wm / om).toFixed(3)} (goal < 1.01)`);
  const io = await timingIoPerStep();
  console.log(
    `timing's own work per step (no engine): ${io.onMs.toFixed(2)} ms on, ${io.offMs.toFixed(2)} ms off: ` +
      `${(io.onMs - io.offMs).toFixed(2)} ms, ${((100 * (io.onMs - io.offMs)) / (om / steps)).toFixed(2)} % of a step with timing off (goal < 1 %)`,
  );
} finally {
  await stack.stop();
}
