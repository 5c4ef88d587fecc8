// bench/reference — the "real anchor": the Python reference's own supervised loop
// (tinker-cookbook 0.6.1 `supervised.train.main` through the official SDK tinker 0.38.0, run by
// test/parity/loops/reference_loops.py in the cached reference venv) against this project's supervised workflow
// (Temporal dev server + worker + activities), on the same engine, model, data file, batch size,
// max_length, learning rate, LoRA rank and step count, no evals, no periodic saves.
//
//   npm run bench:reference [-- --loop sl --steps 12 --batch 8 --max-length 256 --cycle-ms 500 --arms ref,ref-cached,ours,ours-unpipelined]
//
// Conditions: clock cycles off, and `--clock-cycle-ms <cycle-ms>` (engine/README.md). Every arm gets
// a freshly started engine with that condition's flags, so the clock counters are per arm.
// Arms:
//   ref         the reference as shipped. Its dataset builds a new renderer for every row, and the
//               qwen3 renderer deep-copies the tokenizer, so preparing a batch takes seconds on CPU
//               (the reference's own `time/get_batch` metric, printed per step).
//   ref-cached  the same loop with one change made by the driver: the dataset builder's renderer
//               is built once (as ours is), to separate the loop's pipelining from that data cost.
//   ours        `supervisedWorkflow` run to completion by an in-process worker, pipelined as the
//               reference (`submit_ahead` 1: step N+1 queued while step N's results are collected).
//   ours-unpipelined  the same with `submit_ahead` 0 (one activity per step, awaited before the next).
// The model is the engine's tiny-qwen3 written as a checkpoint directory with the shipped Qwen3
// tokenizer files, so the same path is a base model for the engine and a tokenizer name for
// `AutoTokenizer.from_pretrained` (the reference) and for this project.
//
// Per-step wall-clock: from the moment the loop is ready (model created, dataset built) to each
// step's results, step k's time = done(k) − done(k−1). The reference's times come from wrappers
// around its loop (reference_loops.py); ours from the workflow history (createModel and slFinish, or
// unpipelined slStep, completion events). "final save" is the final checkpoint after the last step.
//
// What the ratios mean (printed per condition, ours ÷ each reference arm; < 1 = ours is faster):
//   steps          Σ step times, step 0 included (step 0 also carries each side's first-request costs);
//   steps 1..N−1   steady state, the number to quote for loop overhead;
//   + final save   the same with the final save_state + save_weights_for_sampler.
// Cycles off, the ratio against ref-cached measures the loop machinery (Temporal activities
// vs the reference's plain loop); with `--clock-cycle-ms` it shows what pipelining is worth:
// a loop that submits step N+1 only after step N's results (ours-unpipelined: one activity per
// step) waits for the next cycle boundary each step, one that queues ahead (the reference, ours)
// does not. The
// engine's `cycles_with_work` per arm shows the same from the server side (fewer = more work
// per cycle). train_mean_nll is printed side by side with ours − reference: same seed (LoRA
// seed 0; the SDK's missing seed is the engine's 0), same shuffle (HF Dataset.shuffle(0) then
// set_epoch(0), which ours reproduces), so they agree to float32 rounding.
import { copyFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { SupervisedConfig } from '../../src/cookbook/config/sl.js';
import { resolveDatasetFile } from '../../src/cookbook/supervised/dataset.js';
import { referenceModels, runOurLoop, runReferenceLoops, stepSeconds } from '../../test/parity/loops/harness.js';
import { startTestStack, testRun, type TestStack } from '../../test/support/stack.js';

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '12' },
    batch: { type: 'string', default: '8' },
    'max-length': { type: 'string', default: '256' },
    'learning-rate': { type: 'string', default: '0.005' },
    'lora-rank': { type: 'string', default: '16' },
    'cycle-ms': { type: 'string', default: '500' },
    arms: { type: 'string', default: 'ref,ref-cached,ours,ours-unpipelined' },
  },
});
const steps = Number(values.steps);
const cycleMs = Number(values['cycle-ms']);
const arms = values.arms.split(',') as Arm[];
type Arm = 'ref' | 'ref-cached' | 'ours' | 'ours-unpipelined';
for (const a of arms) if (!['ref', 'ref-cached', 'ours', 'ours-unpipelined'].includes(a)) throw new Error(`unknown arm ${a}`);

const here = import.meta.dirname;
const configPath = join(here, 'sl.json');
const workDir = join(tmpdir(), 'cookbook-bench-reference');
// Defined before the first use below; top-level await keeps the module's order.
const models = await referenceModels();

interface ArmResult {
  arm: Arm;
  /** Seconds per step, from the loop being ready. */
  stepS: number[];
  finalSaveS: number;
  nll: number[];
  getBatchS?: number[];
  clock: Record<string, unknown>;
}

const overrides = [
  `model_name=${models.student}`,
  `dataset.batch_size=${values.batch}`,
  `dataset.max_length=${values['max-length']}`,
  `learning_rate=${values['learning-rate']}`,
  `lora_rank=${values['lora-rank']}`,
  `max_steps=${steps}`,
];

async function clockCounters(stack: TestStack): Promise<Record<string, unknown>> {
  const res = await fetch(`${stack.engine.baseUrl}/api/v1/healthz`);
  return ((await res.json()) as { clock_cycles: Record<string, unknown> }).clock_cycles;
}

async function runReference(stack: TestStack, arm: Arm, tag: string): Promise<ArmResult> {
  const cfg = testRun(stack, configPath, overrides).config as SupervisedConfig;
  const data = resolveDatasetFile(cfg.dataset, here).absPath;
  const work = join(stack.dir, tag);
  mkdirSync(work, { recursive: true });
  const flat = {
    model: models.student,
    renderer_name: 'qwen3',
    learning_rate: cfg.learning_rate,
    lora_rank: cfg.lora_rank,
    steps,
    data,
    batch_size: cfg.dataset.batch_size,
    max_length: cfg.dataset.max_length,
    cache_renderer: arm === 'ref-cached',
  };
  const r = (await runReferenceLoops(models, stack.engine.baseUrl, { sl: flat }, work)).sl!;
  copyFileSync(join(work, 'reference.log'), join(workDir, `${tag}.log`));
  if (r.times.done.length !== steps) throw new Error(`${tag}: the reference ran ${r.times.done.length} steps, not ${steps}`);
  const metrics = r.metrics as Array<Record<string, number>>;
  return {
    arm,
    stepS: stepSeconds(r.times),
    finalSaveS: (r.times.end - r.times.done[steps - 1]) / 1000,
    nll: metrics.map((m) => m.train_mean_nll),
    getBatchS: metrics.map((m) => m['time/get_batch']),
    clock: await clockCounters(stack),
  };
}

async function runOurs(stack: TestStack, arm: Arm = 'ours'): Promise<ArmResult> {
  const run = testRun(stack, configPath, [...overrides, `submit_ahead=${arm === 'ours-unpipelined' ? 0 : 1}`]);
  const r = await runOurLoop(stack, 'sl', run);
  if (r.times.done.length !== steps) throw new Error(`the workflow ran ${r.times.done.length} steps, not ${steps}`);
  return {
    arm,
    stepS: stepSeconds(r.times),
    finalSaveS: (r.times.end - r.times.done[steps - 1]) / 1000,
    nll: (r.metrics as Array<Record<string, number>>).map((m) => m.train_mean_nll),
    clock: await clockCounters(stack),
  };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const f = (x: number | undefined, d = 3) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));
const pad = (s: string, n: number) => s.padStart(n);
const label: Record<Arm, string> = { ref: 'reference', 'ref-cached': 'ref (cached renderer)', ours: 'ours (workflow)', 'ours-unpipelined': 'ours, submit_ahead 0' };

function report(condition: string, results: ArmResult[]): void {
  console.log(`\n=== ${condition} ===`);
  const cols = results.map((r) => label[r.arm]);
  console.log(`per-step wall-clock (s), step k = done(k) − done(k−1) from the loop being ready${results.some((r) => r.getBatchS) ? '; [get_batch] = the reference\'s own time/get_batch' : ''}`);
  console.log(['step', ...cols.map((c) => pad(c, 22))].join(' '));
  for (let k = 0; k < steps; k++) {
    const cells = results.map((r) => pad(`${f(r.stepS[k])}${r.getBatchS ? ` [${f(r.getBatchS[k], 2)}]` : ''}`, 22));
    console.log([pad(String(k), 4), ...cells].join(' '));
  }
  console.log(['sum ', ...results.map((r) => pad(f(sum(r.stepS)), 22))].join(' '));
  console.log(['mean', ...results.map((r) => pad(f(sum(r.stepS) / steps), 22))].join(' '));
  console.log(['save', ...results.map((r) => pad(f(r.finalSaveS), 22))].join(' '));
  const ours = results.find((r) => r.arm === 'ours');
  if (ours) {
    // Also ours ÷ ours-unpipelined: what pipelining is worth by itself.
    for (const r of results.filter((x) => x.arm !== 'ours')) {
      const steadyO = sum(ours.stepS.slice(1));
      const steadyR = sum(r.stepS.slice(1));
      console.log(
        `ratio ours ÷ ${label[r.arm]}: steps ${f(sum(ours.stepS) / sum(r.stepS))}, steps 1..${steps - 1} ${f(steadyO / steadyR)}, ` +
          `steps + final save ${f((sum(ours.stepS) + ours.finalSaveS) / (sum(r.stepS) + r.finalSaveS))}`,
      );
    }
  }
  console.log('\ntrain_mean_nll per step');
  console.log(['step', ...cols.map((c) => pad(c, 22)), ...(ours ? results.filter((r) => r.arm !== 'ours').map((r) => pad(`ours − ${r.arm}`, 16)) : [])].join(' '));
  for (let k = 0; k < steps; k++) {
    const diffs = ours ? results.filter((r) => r.arm !== 'ours').map((r) => pad((ours.nll[k] - r.nll[k]).toExponential(2), 16)) : [];
    console.log([pad(String(k), 4), ...results.map((r) => pad(f(r.nll[k], 6), 22)), ...diffs].join(' '));
  }
  if (ours) {
    for (const r of results.filter((x) => x.arm !== 'ours')) {
      const maxAbs = Math.max(...ours.nll.map((v, k) => Math.abs(v - r.nll[k])));
      const maxRel = Math.max(...ours.nll.map((v, k) => Math.abs(v - r.nll[k]) / Math.abs(r.nll[k])));
      console.log(`max |ours − ${r.arm}| = ${maxAbs.toExponential(2)} (relative ${maxRel.toExponential(2)})`);
    }
  }
  console.log('\nengine clock counters per arm (fresh engine each)');
  for (const r of results) {
    const c = r.clock;
    console.log(
      `  ${pad(label[r.arm], 22)}: ` +
        (Number(c.cycle_ms) > 0 ? `cycles_with_work ${c.cycles_with_work}, ops ${c.ops}, cycles ${c.cycles} (idle included), cycle_ms ${c.cycle_ms}` : `clock off (${JSON.stringify(c)})`),
    );
  }
}

mkdirSync(workDir, { recursive: true });

const conditions: Array<{ name: string; engineArgs: string[] }> = [
  { name: 'clock cycles off', engineArgs: [] },
  ...(cycleMs > 0 ? [{ name: `--clock-cycle-ms ${cycleMs}`, engineArgs: ['--clock-cycle-ms', String(cycleMs)] }] : []),
];
console.log(`steps ${steps}, batch ${values.batch}, max_length ${values['max-length']}, lr ${values['learning-rate']} (linear), LoRA rank ${values['lora-rank']}, model ${models.student}`);
for (const cond of conditions) {
  const stack = await startTestStack({ engineArgs: cond.engineArgs });
  try {
    if (arms.some((a) => a.startsWith('ours'))) {
      // Warm-up (not measured): workflow bundle, tokenizer and dataset cache of this process.
      await runOurs(stack).catch((e) => {
        throw new Error(`warm-up run failed: ${e}`);
      });
    }
    const results: ArmResult[] = [];
    for (const arm of arms) {
      await stack.restartEngine();
      const tag = `${cond.engineArgs.length ? `cycle${cycleMs}` : 'nocycle'}-${arm}`;
      console.error(`[bench:reference] ${cond.name}: ${label[arm]}`);
      results.push(arm === 'ours' || arm === 'ours-unpipelined' ? await runOurs(stack, arm) : await runReference(stack, arm, tag));
      copyFileSync(stack.engine.logFile, join(workDir, `${tag}.engine.log`));
    }
    report(cond.name, results);
  } finally {
    await stack.stop();
  }
}
console.log(`\nlogs (reference driver, engine per arm): ${workDir}/*.log`);
