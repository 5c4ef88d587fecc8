// The soak: one supervised run of thousands of tiny steps on the local stack, while the worker is
// SIGKILLed and restarted periodically (every third kill hits the engine instead, so the run also
// restores from checkpoints). Prints the worker's and the engine's resident memory over time and,
// at the end, the Temporal history of every workflow run of the chain (continue-as-new every
// `--steps-per-run` steps): neither should grow beyond what continue-as-new bounds.
//   npm run soak [-- --steps 2000 --kill-every-s 45 --steps-per-run 250]
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startRun } from '../../src/cli/train.js';
import type { Service } from '../../src/cli/services.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { startTestStack, testRun, workerProcess } from '../../test/support/stack.js';
import { MemorySampler } from '../support/memory.js';

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '2000' },
    'kill-every-s': { type: 'string', default: '45' },
    'steps-per-run': { type: 'string', default: '250' },
    'report-every-s': { type: 'string', default: '30' },
  },
});
const steps = Number(values.steps);
const config = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'sl_small.json');

const stack = await startTestStack({ persist: true });
let worker: Service = await workerProcess(stack, 'soak-worker-0');
const sampler = new MemorySampler(() => ({ worker: worker.proc.pid, engine: stack.engine.proc?.pid }), 5000);
const kills: string[] = [];
let timer: NodeJS.Timeout | undefined;
try {
  const run = testRun(stack, config, [
    'dataset.batch_size=1',
    'dataset.max_length=32',
    'dataset.test_size=0',
    'num_epochs=100000',
    `max_steps=${steps}`,
    'eval_every=0',
    'save_every=100',
    `durability.steps_per_workflow_run=${values['steps-per-run']}`,
  ]);
  const handle = await startRun(stack.client, run, stack.taskQueue);
  const t0 = Date.now();
  console.log(`soak: ${steps} steps, a kill every ${values['kill-every-s']} s (worker; every third: engine), continue-as-new every ${values['steps-per-run']} steps`);
  console.log('   t(s)   step   worker MiB   engine MiB   kills');
  let lastReport = 0;
  let nKills = 0;
  timer = setInterval(async () => {
    nKills += 1;
    const target = nKills % 3 === 0 ? 'engine' : 'worker';
    kills.push(`${target}@${((Date.now() - t0) / 1000).toFixed(0)}s`);
    if (target === 'engine') {
      await stack.restartEngine();
    } else {
      await worker.kill();
      worker = await workerProcess(stack, `soak-worker-${nKills}`);
    }
  }, Number(values['kill-every-s']) * 1000);

  const result = handle.result() as Promise<RunResult>;
  let done = false;
  void result.finally(() => (done = true));
  while (!done) {
    await new Promise((r) => setTimeout(r, 1000));
    if (Date.now() - lastReport < Number(values['report-every-s']) * 1000) continue;
    lastReport = Date.now();
    const step = await handle.query(progressQuery).then((p) => p.step, () => NaN);
    const s = sampler.samples[sampler.samples.length - 1];
    console.log(`${((Date.now() - t0) / 1000).toFixed(0).padStart(7)} ${String(step).padStart(6)} ${(s.worker ?? 0).toFixed(0).padStart(12)} ${(s.engine ?? 0).toFixed(0).padStart(12)}   ${kills.length}`);
  }
  clearInterval(timer);
  const r = await result;
  const wallS = (Date.now() - t0) / 1000;
  console.log(`\n${r.status} after ${r.steps} steps in ${wallS.toFixed(0)} s (${(r.steps / wallS).toFixed(2)} steps/s), ${r.recoveries} recoveries; kills: ${kills.join(' ')}`);

  console.log('\nTemporal history per workflow run (continue-as-new chain, oldest first)');
  const chain: Array<{ start: number; events: number; bytes: number }> = [];
  for await (const wf of stack.client.workflow.list({ query: `WorkflowId = "${run.workflowId}"` })) {
    const desc = await stack.client.workflow.getHandle(run.workflowId, wf.runId).describe();
    chain.push({ start: desc.startTime.getTime(), events: desc.historyLength, bytes: desc.historySize ?? 0 });
  }
  chain.sort((a, b) => a.start - b.start);
  chain.forEach((c, i) => console.log(`  run ${String(i).padStart(3)}: ${String(c.events).padStart(6)} events, ${(c.bytes / 1024).toFixed(0).padStart(6)} KiB`));
  const maxEvents = Math.max(...chain.map((c) => c.events));
  console.log(`  ${chain.length} runs, at most ${maxEvents} events and ${(Math.max(...chain.map((c) => c.bytes)) / 1024).toFixed(0)} KiB each`);

  // Memory growth: the last quarter of the soak against the second (after warm-up), per process.
  sampler.stop();
  const q = Math.floor(sampler.samples.length / 4);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  for (const name of ['worker', 'engine']) {
    const early = mean(sampler.samples.slice(q, 2 * q).map((s) => s[name] ?? 0));
    const late = mean(sampler.samples.slice(3 * q).map((s) => s[name] ?? 0));
    console.log(`${name} RSS: ${early.toFixed(0)} MiB in the second quarter, ${late.toFixed(0)} MiB in the last (${(((late - early) / early) * 100).toFixed(1)}%), peak ${sampler.peak(name).toFixed(0)} MiB`);
  }
  process.exitCode = r.status === 'completed' && r.steps === steps ? 0 : 1;
} finally {
  if (timer) clearInterval(timer);
  sampler.stop();
  await worker.stop();
  await stack.stop();
}
