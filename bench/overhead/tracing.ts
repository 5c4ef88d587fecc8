// bench/overhead/tracing.ts: what OpenTelemetry tracing costs a training step (#38 items 3 and 5).
// One Temporal dev server and one engine that exports its request spans to an OTLP receiver on
// loopback (test/support/otlp-receiver.ts), and two worker processes: one with
// OTEL_EXPORTER_OTLP_ENDPOINT set (workflow, activity and engine spans of every step), one without
// (the default: no SDK loaded, no traceparent sent, so the engine makes no spans either). The same
// N-step supervised run alternates between them, round by round in alternating order; prints
// ms/step of each and the ratio traced / untraced (goal < 1.01), and the spans received per step.
//   npm run bench:tracing [-- --steps 12 --batch 32 --max-length 256 --rounds 2]
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startWorkerProcess, type Service } from '../../src/cli/services.js';
import { startRun } from '../../src/cli/train.js';
import { startOtlpReceiver } from '../../test/support/otlp-receiver.js';
import { metricsOf } from '../../test/support/runs.js';
import { startTestStack, testRun } from '../../test/support/stack.js';

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
// As bench/overhead/run.ts: max_steps, not the dataset, bounds the run; no evals or saves between steps.
const overrides = [`model_name=${values.model}`, `dataset.batch_size=${values.batch}`, `dataset.max_length=${values['max-length']}`, 'dataset.test_size=0', `max_steps=${steps}`, 'num_epochs=100', 'eval_every=0', 'save_every=0'];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const receiver = await startOtlpReceiver();
// The stack's engine inherits it: it continues the traces that arrive, and only those.
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint;
const stack = await startTestStack();
const workers: Service[] = [];
try {
  const queueOf = async (traced: boolean): Promise<string> => {
    const taskQueue = `${stack.taskQueue}-${traced ? 'traced' : 'untraced'}`;
    workers.push(
      await startWorkerProcess({
        temporalAddress: stack.temporalAddress,
        tinkerBaseUrl: stack.engine.baseUrl,
        taskQueue,
        logFile: join(stack.dir, `worker-${traced ? 'traced' : 'untraced'}.log`),
        env: { TINKER_API_KEY: 'tml-bench', OTEL_EXPORTER_OTLP_ENDPOINT: traced ? receiver.endpoint : '' },
      }),
    );
    return taskQueue;
  };
  const queues = { traced: await queueOf(true), untraced: await queueOf(false) };
  const viaWorkflow = async (traced: boolean): Promise<number> => {
    const run = testRun(stack, config, overrides);
    const t0 = performance.now();
    await (await startRun(stack.client, run, traced ? queues.traced : queues.untraced)).result();
    const ms = performance.now() - t0;
    const rows = metricsOf(run.run.logPath);
    if (rows.length !== steps) throw new Error(`the workflow ran ${rows.length} steps, not ${steps}`);
    return ms;
  };
  // Warm-up: each worker's bundle, dataset cache and the engine's model.
  await viaWorkflow(true);
  await viaWorkflow(false);
  const on: number[] = [];
  const off: number[] = [];
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const traced of round % 2 === 0 ? [true, false] : [false, true]) (traced ? on : off).push(await viaWorkflow(traced));
    console.log(`round ${round + 1}: traced ${(on[round] / 1000).toFixed(2)} s, untraced ${(off[round] / 1000).toFixed(2)} s (ratio ${(on[round] / off[round]).toFixed(3)})`);
  }
  // The last spans leave the worker within its batch delay (5 s by default).
  await new Promise((r) => setTimeout(r, 6_000));
  const tracedRuns = Number(values.rounds) + 1;
  const onMs = median(on);
  const offMs = median(off);
  console.log(`\nsteps ${steps}, batch ${values.batch} × max_length ${values['max-length']}, ${values.model}`);
  console.log(`untraced: ${(offMs / steps).toFixed(1)} ms/step; traced: ${(onMs / steps).toFixed(1)} ms/step; tracing adds ${((onMs - offMs) / steps).toFixed(1)} ms per step`);
  console.log(`wall-clock ratio traced / untraced: ${(onMs / offMs).toFixed(3)} (goal < 1.01)`);
  const engineSpans = receiver.spans.filter((s) => s.service === 'tinker-engine').length;
  console.log(`spans received: ${receiver.spans.length} (${engineSpans} from the engine), ${(receiver.spans.length / (tracedRuns * steps)).toFixed(1)} per traced step; ${receiver.errors.length} rejected`);
} finally {
  for (const w of workers) await w.stop();
  await stack.stop();
  await receiver.close();
}
