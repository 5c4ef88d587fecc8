// The long chaos command: `npm run chaos -- --trials 20 [--kind sl|rl|multiturn|dpo|distill|pipeline|sweep] [--kills 4] [--seed 1]
// [--set submit_ahead=0]`. Every trial kills random targets (worker, engine, Temporal server) several times;
// prints `trials equal / trials run`. `--set` overrides config fields of the trials (not of the baseline).
import { parseArgs } from 'node:util';
import { ChaosLab, DISTILL_CHAOS, DPO_CHAOS, MULTITURN_CHAOS, PIPELINE_CHAOS, RL_CHAOS, SL_CHAOS, SWEEP_CHAOS } from './harness.js';

const { values } = parseArgs({
  options: { trials: { type: 'string', default: '20' }, kills: { type: 'string', default: '4' }, seed: { type: 'string', default: '1' }, kind: { type: 'string', default: 'sl' }, set: { type: 'string', multiple: true, default: [] } },
});
const trials = Number(values.trials);
const subjects = { sl: SL_CHAOS, rl: RL_CHAOS, multiturn: MULTITURN_CHAOS, dpo: DPO_CHAOS, distill: DISTILL_CHAOS, pipeline: PIPELINE_CHAOS, sweep: SWEEP_CHAOS };
const subject = subjects[values.kind as keyof typeof subjects];
if (!subject) throw new Error(`--kind: one of ${Object.keys(subjects).join(', ')}`);
const lab = await ChaosLab.start(subject);
let equal = 0;
try {
  const baseline = await lab.baseline();
  console.log(`baseline: ${baseline.steps} steps, fingerprint ${baseline.fingerprint.slice(0, 12)}`);
  for (let i = 0; i < trials; i++) {
    const seed = Number(values.seed) + i;
    const o = await lab.trial(seed, baseline, { kills: Number(values.kills), targets: ['worker', 'engine', 'temporal'], maxGapMs: 4000, overrides: values.set });
    if (o.equal) equal++;
    const kills = o.kills.map((k) => `${k.target}@${(k.atMs / 1000).toFixed(1)}s`).join(' ');
    console.log(`trial ${i + 1} (seed ${seed}): ${o.equal ? 'equal' : 'DIFFERENT: ' + o.differences.join('; ')} · kills ${kills} · recoveries ${o.recoveries}`);
  }
} finally {
  await lab.stop();
}
console.log(`\n${equal} trials equal / ${trials} trials run`);
process.exit(equal === trials ? 0 : 1);
