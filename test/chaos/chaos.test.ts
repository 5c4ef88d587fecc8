// The quick chaos suite for CI: for the supervised workflow one trial per kill target (worker,
// engine, Temporal server), each killing its target twice at seeded moments (pipelined steps, the
// default), one unpipelined trial compared with the same pipelined baseline, plus a stop sent while
// the run recovers from an engine crash; for RL an engine kill (restore from a checkpoint with its
// rollout state) and a Temporal server kill; for DPO and distillation an engine kill; for
// multi-turn RL (twenty questions) two kills drawn from engine and worker mid-episode; for a
// pipeline (SFT → DPO child workflows) two kills drawn from worker and engine; for a sweep (three SL
// points as child workflows, two at a time) three kills drawn from worker, engine and Temporal server. The long variant is
// `npm run chaos -- --trials 20 [--kind sl|rl|multiturn|dpo|distill|pipeline|sweep]`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChaosLab, DISTILL_CHAOS, DPO_CHAOS, MULTITURN_CHAOS, PIPELINE_CHAOS, RL_CHAOS, SWEEP_CHAOS, type Baseline, type Target } from './harness.js';

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

  for (const [target, seed] of [['worker', 11], ['engine', 12], ['temporal', 13]] as Array<[Target, number]>) {
    it(`killing the ${target} twice leaves the result of an uninterrupted run`, async () => {
      const outcome = await lab.trial(seed, baseline, { kills: 2, targets: [target], maxGapMs: 3000 });
      expect(outcome.kills.length).toBeGreaterThan(0);
      expect(outcome.differences).toEqual([]);
      if (target === 'engine') expect(outcome.recoveries).toBeGreaterThan(0);
    });
  }

  // The baseline ran pipelined (submit_ahead 1, the default); the unpipelined loop must end equal to it.
  it('unpipelined (submit_ahead 0), two kills of the worker or engine leave the result of the uninterrupted pipelined run', async () => {
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

for (const subject of [RL_CHAOS, MULTITURN_CHAOS, DPO_CHAOS, DISTILL_CHAOS, PIPELINE_CHAOS, SWEEP_CHAOS]) {
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

    const trials: Array<[Target[], number]> =
      subject === RL_CHAOS
        ? [[['engine'], 21], [['temporal'], 22]]
        : subject === PIPELINE_CHAOS
          ? [[['worker', 'engine'], 41]]
          : subject === SWEEP_CHAOS
            ? [[['worker', 'engine', 'temporal'], 51]]
            : subject === MULTITURN_CHAOS
              ? [[['engine', 'worker'], 61]]
              : [[['engine'], 31]];
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
