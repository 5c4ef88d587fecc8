// The chaos suite: seeded SIGKILLs of the worker, the engine or the Temporal server during a run,
// whose final weights, metrics.jsonl and checkpoints.jsonl must equal an uninterrupted run's.
// The gate (`npm test`) keeps what no other gate test checks: a Temporal server killed twice under
// a supervised run, a stop sent while the run recovers from an engine crash, and on-policy
// distillation through an engine kill (docs/testing.md maps the rest to their gate tests). The
// fuller tier (`npm run test:full`) adds a trial per kill target for SL (worker, engine), one
// unpipelined, and every other kind: RL (engine, Temporal), multi-turn RL (twenty questions, engine
// or worker mid-episode), DPO, a pipeline (SFT → DPO child workflows: worker or engine) and a sweep
// (three SL points as child workflows, two at a time: worker, engine or Temporal server). The long
// variant is `npm run chaos -- --trials 20 [--kind sl|rl|multiturn|dpo|distill|pipeline|sweep]`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullTier, inFullTier } from '../support/tier.js';
import { ChaosLab, DISTILL_CHAOS, DPO_CHAOS, MULTITURN_CHAOS, PIPELINE_CHAOS, RL_CHAOS, SWEEP_CHAOS, type Baseline, type ChaosRun, type Target } from './harness.js';

describe('chaos (quick)', () => {
  let lab: ChaosLab;
  let baseline: Baseline;
  beforeAll(async () => {
    lab = await ChaosLab.start();
    baseline = await lab.baseline();
  });
  afterAll(async () => {
    await lab?.stop();
  });

  for (const [target, seed] of inFullTier<[Target, number]>([['temporal', 13]], [['worker', 11], ['engine', 12]])) {
    it(`killing the ${target} twice leaves the result of an uninterrupted run`, async () => {
      const outcome = await lab.trial(seed, baseline, { kills: 2, targets: [target], maxGapMs: 3000 });
      expect(outcome.kills.length).toBeGreaterThan(0);
      expect(outcome.differences).toEqual([]);
      if (target === 'engine') expect(outcome.recoveries).toBeGreaterThan(0);
    });
  }

  // The baseline ran pipelined (submit_ahead 1, the default); the unpipelined loop must end equal to it.
  // (test/workflows/sl-crash.test.ts kills the worker and the engine under both loops in the gate.)
  if (fullTier) it('unpipelined (submit_ahead 0), two kills of the worker or engine leave the result of the uninterrupted pipelined run', async () => {
    const outcome = await lab.trial(14, baseline, { kills: 2, targets: ['worker', 'engine'], maxGapMs: 3000, overrides: ['submit_ahead=0'] });
    expect(outcome.kills.length).toBeGreaterThan(0);
    expect(outcome.differences).toEqual([]);
  });

  it('a stop during recovery ends the run stopped, with a final checkpoint of trained steps only', async () => {
    const { result, run } = await lab.stopDuringRecovery();
    expect(result.status).toBe('stopped');
    const observed = await lab.observe(run, result);
    // Whatever was trained is exactly the uninterrupted run's prefix.
    expect(observed.metrics).toEqual(baseline.metrics.slice(0, observed.metrics.length));
    expect(observed.metrics).toHaveLength(result.steps);
    const final = observed.checkpoints[observed.checkpoints.length - 1];
    expect(final).toMatchObject({ name: 'final', stopped_early: true });
  });
});

// Each kind's trials: kill targets and a seed per trial.
const kindTrials = inFullTier<[ChaosRun, Array<[Target[], number]>]>(
  [[DISTILL_CHAOS, [[['engine'], 31]]]],
  [
    [RL_CHAOS, [[['engine'], 21], [['temporal'], 22]]],
    [MULTITURN_CHAOS, [[['engine', 'worker'], 61]]],
    [DPO_CHAOS, [[['engine'], 31]]],
    [PIPELINE_CHAOS, [[['worker', 'engine'], 41]]],
    [SWEEP_CHAOS, [[['worker', 'engine', 'temporal'], 51]]],
  ],
);

for (const [subject, trials] of kindTrials) {
  describe(`chaos (quick, ${subject.name ?? subject.kind})`, { timeout: 900_000 }, () => {
    let lab: ChaosLab;
    let baseline: Baseline;
    beforeAll(async () => {
      lab = await ChaosLab.start(subject);
      baseline = await lab.baseline();
    }, 900_000); // a baseline of several child runs (pipeline, sweep) on a loaded machine takes minutes
    afterAll(async () => {
      await lab?.stop();
    });

    for (const [targets, seed] of trials) {
      it(`${targets.length === 1 ? 'killing' : `${targets.length} kills of`} the ${targets.join(' or ')} leave${targets.length === 1 ? 's' : ''} the result of an uninterrupted ${subject.kind} run`, async () => {
        const kills = targets.length;
        const outcome = await lab.trial(seed, baseline, { kills, targets, maxGapMs: 5000 });
        expect(outcome.kills.length).toBe(kills);
        expect(outcome.differences).toEqual([]);
      });
    }
  });
}
