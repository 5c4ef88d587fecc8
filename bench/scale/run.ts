// bench/scale: RL rollouts spread over 1, 2 and 4 sampler engines (`sampler_pool`), one engine
// training. On a 2-core machine the engines' real compute cannot scale, so each sampler engine
// emulates a GPU's service time (`--sample-ms-per-token`, one request at a time per engine:
// `--sample-slots 1`) and what is measured is the orchestration: spreading requests, syncing the
// new weights to every engine each step, collecting the groups. Prints, per N, rollout throughput
// (trajectories per second of the steps' `time/sampling`), sampled tokens per second and step time
// (`time/total`), and the throughput's ratio to ideal (N × the N = 1 throughput); goal ≥ 0.8 at N = 4.
//   npm run bench:scale [-- --steps 3 --rounds 2 --ms-per-token 200 --engines 1,2,4]
// The emulated time must dominate the real compute (the engines' sampling, the worker's rendering
// and requests, the trainer), which 2 cores cannot scale: at 200 ms per token a request holds its
// engine 1.6 s, against ~0.1 s of real compute for the tiny model on a quiet core.
// Sizes run in rounds (order reversed every other round, as the machine's speed drifts); each
// round's ratios use that round's N = 1, and the summary is the geometric mean over rounds.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startEngine, type Service } from '../../src/cli/services.js';
import { startRun } from '../../src/cli/train.js';
import { onFreePort } from '../../test/support/free-port.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { startTestStack, testRun, withWorker } from '../../test/support/stack.js';

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '2' },
    'ms-per-token': { type: 'string', default: '200' },
    engines: { type: 'string', default: '1,2,4' },
    'max-in-flight': { type: 'string', default: '16' },
  },
});
const steps = Number(values.steps);
const rounds = Number(values.rounds);
const sizes = values.engines!.split(',').map(Number);
const config = join(import.meta.dirname, 'rl.json');

const stack = await startTestStack({ own: true });
const samplers: Array<Service & { baseUrl: string }> = [];
try {
  const emulation = ['--sample-ms-per-token', values['ms-per-token']!, '--sample-slots', '1'];
  for (let i = 0; i < Math.max(...sizes); i++) {
    samplers.push((await onFreePort({ dataDir: join(stack.dir, `sampler-${i}`), extraArgs: emulation }, startEngine)).service);
  }
  await withWorker(stack, async () => {
    async function measure(n: number, maxSteps = steps) {
      const pool = { base_urls: samplers.slice(0, n).map((e) => e.baseUrl), max_in_flight: Number(values['max-in-flight']) };
      const run = testRun(stack, config, [`max_steps=${maxSteps}`, `sampler_pool=${JSON.stringify(pool)}`], 'rl');
      await (await startRun(stack.client, run, stack.taskQueue)).result();
      // Step 0 opens sessions and imports the first weights everywhere: timed from step 1 on.
      const rows = new RunStore(run.run.logPath).readMetrics().filter((r) => typeof r['time/sampling'] === 'number' && (r.step as number) >= 1);
      const sum = (k: string) => rows.reduce((a, r) => a + (r[k] as number), 0);
      const sampling = sum('time/sampling');
      return {
        rolloutsPerS: sum('env/all/total_episodes') / sampling,
        tokensPerS: sum('tokens/sampled') / sampling,
        stepS: sum('time/total') / rows.length,
      };
    }

    await measure(Math.max(...sizes), 1); // untimed warm-up: code paths, tokenizer, every engine's caches
    const ratios = new Map<number, number[]>(sizes.map((n) => [n, []]));
    for (let round = 0; round < rounds; round++) {
      const results = new Map<number, Awaited<ReturnType<typeof measure>>>();
      for (const n of round % 2 === 0 ? sizes : [...sizes].reverse()) {
        const r = await measure(n);
        results.set(n, r);
        console.log(`round ${round + 1} N=${n}: ${r.rolloutsPerS.toFixed(2)} rollouts/s, ${r.tokensPerS.toFixed(1)} sampled tokens/s, step ${r.stepS.toFixed(2)} s`);
      }
      const base = results.get(Math.min(...sizes))!;
      for (const n of sizes) {
        const ratio = results.get(n)!.rolloutsPerS / (base.rolloutsPerS * (n / Math.min(...sizes)));
        ratios.get(n)!.push(ratio);
        console.log(`round ${round + 1} N=${n}: ratio to ideal ${ratio.toFixed(2)}`);
      }
    }
    for (const n of sizes) {
      const rs = ratios.get(n)!;
      const geomean = Math.exp(rs.reduce((a, r) => a + Math.log(r), 0) / rs.length);
      console.log(`N=${n}: rollout throughput ${geomean.toFixed(2)} of ideal (rounds: ${rs.map((r) => r.toFixed(2)).join(', ')})`);
    }
  });
} finally {
  await Promise.all(samplers.map((e) => e.stop().catch(() => undefined)));
  await stack.stop();
}
