// bench/reference --loop rl|dpo|distill|off_policy|off_policy_multi|sdft — the reference's own loop (tinker-cookbook 0.6.1 + SDK
// 0.38.0, unmodified, run by test/parity/loops/reference_loops.py) against this project's
// workflow, on one engine, same model, data and hyperparameters (test/parity/loops/<loop>.json with
// the sizes below as overrides; both sides are built from that one config).
//
//   npm run bench:reference -- --loop rl [--steps 8 --batch 4 --group 4 --max-tokens 16 --async K --repeat 1 --arms ref,ours --load --request-log]
//
// --load: every measured arm runs beside a fixed CPU load (one busy process pinned to one core,
// bench/support/cpu-load.ts), started after the engine's restart and stopped when the arm ends.
//
// --request-log: every engine logs the requests it serves (bench/support/engine-requests.ts); the
// bench prints each loop's requests per route and the time the engine sat with no request open.
//
// --async K (rl): both sides off-policy, sampling up to K steps ahead of training (the reference's
// AsyncConfig, our async_config), groups_per_batch = --batch.
//
// Per-step wall-clock from the moment each loop is ready (model created, dataset built) to each
// step's metrics row: step k = done(k) − done(k−1). The engine is restarted before every arm, and
// arms alternate their order between repeats, so neither side always runs on a warm engine. Our
// side is warmed up first (one unmeasured step: workflow bundle, tokenizer, data caches); the
// reference's imports are outside its loop's ready mark.
//
// Printed: per-step times side by side (median over repeats), Σ steps, steady state (steps 1..N−1),
// ready→end (with the final save), and ours ÷ reference for each (< 1: ours is faster). For RL and
// distillation also where our step's time goes (off-policy: the teacher passes, then training): the sampling phase (first rollout scheduled → last
// rollout completed) and the training activity, beside the reference's own time/sampling (or
// time/sample) and time/do_train_step_and_get_sampling_client (else time/train_step) metrics. Then
// every time/<span> both sides' rows hold (step 0, median of the later steps), and the CPU seconds
// the engine and each loop's own processes spent over the arm (bench/support/cpu-time.ts).
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { startTestStack } from '../../test/support/stack.js';
import { describeCpuLoad, startCpuLoad } from '../support/cpu-load.js';
import { startCpuMeter } from '../support/cpu-time.js';
import { enableEngineRequestLog, requestLogFiles, summariseRequests, type RequestSummary } from '../support/engine-requests.js';
import {
  ourRun,
  referenceConfig,
  referenceModels,
  runOurLoop,
  runReferenceLoops,
  stepSeconds,
  type ActivitySpan,
  type Loop,
  type LoopResult,
} from '../../test/parity/loops/harness.js';

const { values } = parseArgs({
  options: {
    loop: { type: 'string', default: 'rl' },
    steps: { type: 'string' },
    batch: { type: 'string' },
    group: { type: 'string' },
    'max-tokens': { type: 'string' },
    async: { type: 'string' },
    repeat: { type: 'string', default: '1' },
    arms: { type: 'string', default: 'ref,ours' },
    load: { type: 'boolean', default: false },
    'request-log': { type: 'boolean', default: false },
  },
});
const loop = values.loop as Loop;
const BENCH_LOOPS = ['rl', 'dpo', 'distill', 'off_policy', 'off_policy_multi', 'sdft'];
if (!BENCH_LOOPS.includes(loop)) throw new Error(`--loop ${loop}: one of ${BENCH_LOOPS.join(', ')} (sl: bench:reference without --loop)`);
const offPolicy = loop === 'off_policy' || loop === 'off_policy_multi';
const DEFAULTS: Record<string, { steps: number; batch: number; group?: number; maxTokens?: number }> = {
  rl: { steps: 8, batch: 4, group: 4, maxTokens: 16 },
  dpo: { steps: 8, batch: 4 },
  distill: { steps: 4, batch: 4, group: 4, maxTokens: 16 }, // the prompts file has 16 prompts
  // The step's batch (each domain's dataset batch as large, so every domain can fill its share).
  off_policy: { steps: 6, batch: 8 },
  off_policy_multi: { steps: 6, batch: 8 },
  sdft: { steps: 4, batch: 4, group: 2, maxTokens: 16 },
};
const d = DEFAULTS[loop];
const steps = Number(values.steps ?? d.steps);
const batch = Number(values.batch ?? d.batch);
const group = Number(values.group ?? d.group);
const maxTokens = Number(values['max-tokens'] ?? d.maxTokens);
const repeat = Number(values.repeat);
const arms = values.arms.split(',') as Array<'ref' | 'ours'>;
for (const a of arms) if (a !== 'ref' && a !== 'ours') throw new Error(`unknown arm ${a} (ref, ours)`);

function overrides(n: number): string[] {
  const o = [`max_steps=${n}`];
  if (loop === 'rl') o.push(`dataset.batch_size=${batch}`, `dataset.group_size=${group}`, `max_tokens=${maxTokens}`);
  if (loop === 'rl' && values.async !== undefined) o.push(`async_config=${JSON.stringify({ max_steps_off_policy: Number(values.async), groups_per_batch: batch, loss_fn: 'importance_sampling' })}`);
  if (loop === 'dpo') o.push(`dataset.batch_size=${batch}`);
  if (offPolicy) o.push(`batch_size=${batch}`, 'dataset_configs.0.dataset.batch_size=' + batch);
  if (loop === 'off_policy_multi') o.push('dataset_configs.1.dataset.batch_size=' + batch);
  if (loop === 'sdft') o.push(`dataset.groups_per_batch=${batch}`, `dataset.group_size=${group}`, `max_tokens=${maxTokens}`, 'temperature=1');
  if (loop === 'distill') o.push(`dataset_configs.0.groups_per_batch=${batch}`, `dataset_configs.0.dataset.group_size=${group}`, `max_tokens=${maxTokens}`);
  return o;
}

interface Measured {
  arm: 'ref' | 'ours';
  stepS: number[];
  wholeS: number;
  /** Per step: [sampling, training] seconds, where the arm can tell. */
  phases: Array<[number, number] | undefined>;
  /** Per step: the row's `time/<span>` metrics (both sides time the reference's span names). */
  spans: Array<Record<string, number>>;
  /** CPU seconds over the arm: engine, temporal, self (this process: our worker, the meter), rest (the reference's driver). */
  cpu: Record<string, number>;
  /** With --request-log: the engine's requests over the arm. */
  requests?: RequestSummary;
}

const spansOf = (rows: Array<Record<string, unknown>>): Array<Record<string, number>> =>
  rows.map((m) => Object.fromEntries(Object.entries(m).filter(([k, v]) => k.startsWith('time/') && typeof v === 'number')) as Record<string, number>);

/** What samples before a step trains: rollouts, or off-policy distillation's teacher passes. */
const ROLLOUT = /RolloutGroup$|^offPolicyTeacherTargets$|^sdftTeacherGroup$/;
const TRAIN = /^(rlTrain|distillTrain|offPolicyDistillTrain|sdftTrain|dpoStep|dpoFinish)$/;

/** Our step k's sampling phase and training activity, from the activities' history. */
function ourPhases(r: LoopResult): Array<[number, number] | undefined> {
  const acts = r.activities ?? [];
  const train = acts.filter((a) => TRAIN.test(a.type));
  return train.map((t, k) => {
    const prev = k === 0 ? r.times.ready : train[k - 1].completed;
    const rollouts = acts.filter((a: ActivitySpan) => ROLLOUT.test(a.type) && a.scheduled >= prev && a.completed <= t.scheduled);
    const sampling = rollouts.length ? (Math.max(...rollouts.map((a) => a.completed)) - Math.min(...rollouts.map((a) => a.scheduled))) / 1000 : 0;
    return [sampling, (t.completed - t.scheduled) / 1000];
  });
}

function referencePhases(rows: Array<Record<string, unknown>>): Array<[number, number] | undefined> {
  return rows.map((m) => {
    const sampling = Number(m['time/sampling'] ?? m['time/sample'] ?? NaN);
    // Our training activity holds what the reference's do_train_step_and_get_sampling_client does
    // (the teacher's pass or KL penalty, the update, the sampler save), not only its train_step.
    const train = Number(m['time/do_train_step_and_get_sampling_client'] ?? m['time/train_step'] ?? m['time/step'] ?? NaN);
    return Number.isNaN(sampling) && Number.isNaN(train) ? undefined : [sampling, train];
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const f = (x: number | undefined, digits = 2) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(digits));

const models = await referenceModels();
const requestLog = values['request-log'] ? join(mkdtempSync(join(tmpdir(), 'bench-reference-requests-')), 'engine') : undefined;
if (requestLog) enableEngineRequestLog(requestLog);
const stack = await startTestStack({ own: true });
const results: Measured[] = [];
try {
  console.error(`[bench:reference] ${loop}: warm-up of our side (one step, not measured)`);
  await runOurLoop(stack, loop, ourRun(stack, loop, models, overrides(1)));
  for (let rep = 0; rep < repeat; rep++) {
    for (const arm of rep % 2 === 0 ? arms : [...arms].reverse()) {
      // The restarted engine opens its request log as it starts.
      const logsBefore = new Set(requestLog ? requestLogFiles(requestLog) : []);
      await stack.restartEngine();
      const run = ourRun(stack, loop, models, overrides(steps));
      console.error(`[bench:reference] ${loop} repeat ${rep + 1}/${repeat}: ${arm}${values.load ? ' (under load)' : ''}`);
      const load = values.load ? startCpuLoad() : undefined;
      const meter = startCpuMeter(() => ({ engine: [stack.engine.proc?.pid], temporal: [stack.temporal.proc?.pid], load: [load?.pid] }));
      let cpu: Record<string, number> = {};
      try {
        if (arm === 'ours') {
          const r = await runOurLoop(stack, loop, run);
          results.push({ arm, stepS: stepSeconds(r.times), wholeS: (r.times.end - r.times.ready) / 1000, phases: ourPhases(r), spans: spansOf(r.metrics), cpu: {} });
        } else {
          const work = join(stack.dir, `reference-${rep}`);
          mkdirSync(work, { recursive: true });
          const r = (await runReferenceLoops(models, stack.engine.baseUrl, { [loop]: referenceConfig(loop, run, models, work) }, work))[loop]!;
          results.push({ arm, stepS: stepSeconds(r.times), wholeS: (r.times.end - r.times.ready) / 1000, phases: referencePhases(r.metrics), spans: spansOf(r.metrics), cpu: {} });
        }
      } finally {
        cpu = meter.stop();
        await load?.stop();
      }
      const last = results[results.length - 1];
      last.cpu = cpu;
      if (requestLog) last.requests = summariseRequests(requestLogFiles(requestLog).filter((f) => !logsBefore.has(f)));
      if (last.stepS.length !== steps) throw new Error(`${arm} ran ${last.stepS.length} steps, not ${steps}`);
    }
  }
} finally {
  await stack.stop();
}

const of = (arm: 'ref' | 'ours') => results.filter((r) => r.arm === arm);
const perStep = (arm: 'ref' | 'ours') => Array.from({ length: steps }, (_, k) => median(of(arm).map((r) => r.stepS[k])));
const phase = (arm: 'ref' | 'ours', k: number, i: 0 | 1) => median(of(arm).map((r) => r.phases[k]?.[i] ?? NaN));
console.log(`\n=== ${loop}${values.async !== undefined ? ` (async, ${values.async} steps off-policy)` : ''}: ${steps} steps, batch ${batch}${loop === 'dpo' || offPolicy ? '' : `, group ${group}, max_tokens ${maxTokens}`}; median of ${repeat} repeat(s); engine restarted per arm${values.load ? `; under load: ${describeCpuLoad()}` : ''} ===`);
console.log('per-step wall-clock (s) from the loop being ready; [sampling / training] phases');
console.log(['step', ...arms.map((a) => (a === 'ref' ? 'reference' : 'ours (workflow)').padStart(30))].join(' '));
const cols = Object.fromEntries(arms.map((a) => [a, perStep(a)]));
for (let k = 0; k < steps; k++) {
  console.log([String(k).padStart(4), ...arms.map((a) => `${f(cols[a][k])} [${f(phase(a, k, 0))} / ${f(phase(a, k, 1))}]`.padStart(30))].join(' '));
}
const whole = Object.fromEntries(arms.map((a) => [a, median(of(a).map((r) => r.wholeS))]));
console.log(['sum ', ...arms.map((a) => f(sum(cols[a])).padStart(30))].join(' '));
console.log(['1..N', ...arms.map((a) => f(sum(cols[a].slice(1))).padStart(30))].join(' '));
console.log(['end ', ...arms.map((a) => f(whole[a]).padStart(30))].join(' '));
if (arms.includes('ref') && arms.includes('ours')) {
  console.log(
    `ratio ours ÷ reference: steps ${f(sum(cols.ours) / sum(cols.ref), 3)}, steps 1..${steps - 1} ${f(sum(cols.ours.slice(1)) / sum(cols.ref.slice(1)), 3)}, ` +
      `ready→end ${f(whole.ours / whole.ref, 3)}`,
  );
}

// Where the time goes: each span both rows time, step 0 and the median of steps 1..N−1 (medians
// over repeats), so a gap in a step's wall-clock can be traced to the span that holds it.
const spanKeys = [...new Set(results.flatMap((r) => r.spans.flatMap((row) => Object.keys(row))))].filter((k) =>
  arms.every((a) => of(a).some((r) => r.spans.some((row) => k in row))),
);
if (spanKeys.length) {
  const at = (a: 'ref' | 'ours', k: string, steps_: number[]) => median(of(a).map((r) => median(steps_.map((s) => r.spans[s]?.[k] ?? NaN))));
  const later = Array.from({ length: steps - 1 }, (_, i) => i + 1);
  console.log('\nspans both sides time (s): step 0, then the median of steps 1..N−1');
  console.log(['span'.padEnd(64), ...arms.map((a) => (a === 'ref' ? 'reference' : 'ours').padStart(16))].join(' '));
  for (const k of spanKeys.sort()) {
    console.log([k.padEnd(64), ...arms.map((a) => `${f(at(a, k, [0]))} / ${f(later.length ? at(a, k, later) : NaN)}`.padStart(16))].join(' '));
  }
}

// CPU seconds over each arm (medians over repeats): on a machine with as many cores as the engine
// has threads, what a loop's own processes spend is taken from the engine while it computes.
const cpuGroups = [...new Set(results.flatMap((r) => Object.keys(r.cpu)))].filter((g) => g !== 'load').sort();
console.log('\nCPU seconds over the arm (medians): engine; the loop\'s own processes (self: this process, our worker in it; temporal; rest: the reference\'s driver)');
console.log(['group'.padEnd(12), ...arms.map((a) => (a === 'ref' ? 'reference' : 'ours').padStart(12))].join(' '));
for (const g of cpuGroups) console.log([g.padEnd(12), ...arms.map((a) => f(median(of(a).map((r) => r.cpu[g] ?? 0))).padStart(12))].join(' '));

// --request-log: what each loop asked of the engine, and how long the engine sat with nothing open.
if (requestLog) {
  const withLog = (a: 'ref' | 'ours') => of(a).filter((r) => r.requests);
  const routes = [...new Set(results.flatMap((r) => Object.keys(r.requests?.routes ?? {})))].sort();
  console.log(`\nengine requests per arm (medians; logs under ${dirname(requestLog)})`);
  console.log(['route'.padEnd(32), ...arms.map((a) => (a === 'ref' ? 'reference' : 'ours').padStart(12))].join(' '));
  for (const route of routes) console.log([route.padEnd(32), ...arms.map((a) => String(median(withLog(a).map((r) => r.requests!.routes[route] ?? 0))).padStart(12))].join(' '));
  console.log(['engine idle s (gaps)'.padEnd(32), ...arms.map((a) => `${f(median(withLog(a).map((r) => r.requests!.idleS)))} (${median(withLog(a).map((r) => r.requests!.gaps))})`.padStart(12))].join(' '));
}
