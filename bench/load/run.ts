// bench/load: many tiny runs at once on one worker process and one engine. Every run first runs
// alone (its solo result), then all start together; each must end with exactly its solo metrics,
// checkpoints and final weights. Prints runs, wall time, steps per second (solo, one after another,
// and all at once) and the peak resident memory of the worker and the engine.
//   npm run bench:load [-- --sl 16 --rl 4 --sl-steps 6]
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../../test/support/runs.js';
import { startTestStack, testRun, workerProcess, type TestStack } from '../../test/support/stack.js';
import { MemorySampler } from '../support/memory.js';

const { values } = parseArgs({
  options: {
    sl: { type: 'string', default: '16' },
    rl: { type: 'string', default: '4' },
    'sl-steps': { type: 'string', default: '6' },
  },
});
const fixtures = join(import.meta.dirname, '..', '..', 'test', 'fixtures');

interface Spec {
  kind: 'sl' | 'rl';
  config: string;
  overrides: string[];
}
// Distinct seeds, so that no two runs are the same computation.
const specs: Spec[] = [
  ...Array.from({ length: Number(values.sl) }, (_, i): Spec => ({ kind: 'sl', config: join(fixtures, 'sl_small.json'), overrides: [`seed=${i}`, `max_steps=${values['sl-steps']}`] })),
  ...Array.from({ length: Number(values.rl) }, (_, i): Spec => ({ kind: 'rl', config: join(fixtures, 'rl_small.json'), overrides: [`seed=${100 + i}`, 'dataset.n_batches=3'] })),
];

interface Outcome {
  steps: number;
  metrics: unknown;
  checkpoints: unknown;
  fingerprint: string;
}

async function outcome(stack: TestStack, run: ReturnType<typeof testRun>, result: RunResult): Promise<Outcome> {
  // Timing metrics are wall-clock, not results.
  const untimed = metricsOf(run.run.logPath).map((row) => Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith('time/'))));
  return {
    steps: result.steps,
    metrics: untimed,
    checkpoints: checkpointsOf(run.run.logPath),
    fingerprint: await weightsFingerprint(stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!),
  };
}

const stack = await startTestStack();
const worker = await workerProcess(stack, 'load-worker');
const sampler = new MemorySampler(() => ({ worker: worker.proc.pid, engine: stack.engine.proc?.pid }), 500);
try {
  console.log(`${specs.length} runs (${values.sl} SL of ${values['sl-steps']} steps, ${values.rl} RL of 3 steps) on one worker process and one engine`);
  const soloStart = Date.now();
  const solo: Outcome[] = [];
  for (const spec of specs) {
    const run = testRun(stack, spec.config, spec.overrides, spec.kind);
    solo.push(await outcome(stack, run, (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult));
  }
  const soloS = (Date.now() - soloStart) / 1000;
  const soloPeak = { worker: sampler.peak('worker'), engine: sampler.peak('engine') };

  const allStart = Date.now();
  const runs = specs.map((spec) => testRun(stack, spec.config, spec.overrides, spec.kind));
  const handles = await Promise.all(runs.map((run) => startRun(stack.client, run, stack.taskQueue)));
  const results = (await Promise.all(handles.map((h) => h.result()))) as RunResult[];
  const allS = (Date.now() - allStart) / 1000;
  const together = await Promise.all(runs.map((run, i) => outcome(stack, run, results[i])));

  const steps = solo.reduce((n, o) => n + o.steps, 0);
  const differing = together.flatMap((o, i) => (JSON.stringify(o) === JSON.stringify(solo[i]) ? [] : [`${runs[i].workflowId} (${specs[i].kind} ${specs[i].overrides.join(' ')})`]));
  console.log(`\nsolo, one after another: ${soloS.toFixed(1)} s for ${steps} steps (${(steps / soloS).toFixed(2)} steps/s)`);
  console.log(`all ${specs.length} at once:         ${allS.toFixed(1)} s for ${steps} steps (${(steps / allS).toFixed(2)} steps/s), ${(soloS / allS).toFixed(2)}× the solo throughput`);
  console.log(`completed: ${results.filter((r) => r.status === 'completed').length}/${results.length}; equal to their solo runs: ${specs.length - differing.length}/${specs.length}`);
  for (const d of differing) console.log(`  DIFFERENT: ${d}`);
  sampler.stop();
  console.log(`peak RSS, solo runs:      worker ${soloPeak.worker.toFixed(0)} MiB, engine ${soloPeak.engine.toFixed(0)} MiB`);
  console.log(`peak RSS, all at once:    worker ${sampler.peak('worker').toFixed(0)} MiB, engine ${sampler.peak('engine').toFixed(0)} MiB`);
  process.exitCode = differing.length === 0 && results.every((r) => r.status === 'completed') ? 0 : 1;
} finally {
  sampler.stop();
  await worker.stop();
  await stack.stop();
}
