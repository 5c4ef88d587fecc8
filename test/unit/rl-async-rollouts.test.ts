// The async RL schedule of 0.6.1's do_async_training (src/workflows/rl-async-rollouts.ts), driven by
// rollouts whose completion the test decides: the slot cap, oldest-first batches, nothing dropped
// as stale, no builder past end_batch, filtered groups freeing their slot at once.
import { describe, expect, it } from 'vitest';
import type { RolloutGroupResult } from '../../src/activities/types.js';
import { AsyncRollouts } from '../../src/workflows/rl-async-rollouts.js';
import { emptyOffPolicyState } from '../../src/workflows/rl-off-policy.js';

interface Pending {
  builder: number;
  samplingStep: number;
  finish(trainable?: boolean): void;
}

/** A queue whose rollouts finish when the test says; `sampler` is the step their weights are of. */
function harness(totalBuilders: number, slots: number, groupsPerDatasetBatch = 2) {
  const pending: Pending[] = [];
  const launched: number[] = [];
  let sampler = 0;
  const q = new AsyncRollouts(emptyOffPolicyState(), {
    totalBuilders,
    groupsPerDatasetBatch,
    slots,
    launch: (batch, group) =>
      new Promise<RolloutGroupResult>((resolve) => {
        const builder = batch * groupsPerDatasetBatch + group;
        const samplingStep = sampler;
        launched.push(builder);
        pending.push({
          builder,
          samplingStep,
          finish: (trainable = true) => resolve({ batch, group, samplingStep, ref: trainable ? `g${builder}` : null, errorTypes: [] } as unknown as RolloutGroupResult),
        });
      }),
  });
  const finish = async (builder: number, trainable = true) => {
    const i = pending.findIndex((p) => p.builder === builder);
    pending.splice(i, 1)[0].finish(trainable);
    await new Promise((r) => setImmediate(r));
  };
  return { q, pending, launched, finish, setSampler: (s: number) => (sampler = s) };
}

const builders = (gs: RolloutGroupResult[]) => gs.map((g) => g.batch * 2 + g.group);

describe('async rollouts as 0.6.1', () => {
  it('caps rollouts at the slots, trains the oldest first, drops nothing for staleness, launches nothing past end_batch', async () => {
    // groups_per_batch 2, max_steps_off_policy 1: 4 slots; 4 dataset batches of 2 groups.
    const h = harness(8, 4);
    const step0 = h.q.collect(2);
    expect(h.launched).toEqual([0, 1, 2, 3]); // the slots, no more
    await h.finish(2);
    await h.finish(0);
    await h.finish(1);
    const s0 = await step0;
    expect(builders(s0.groups)).toEqual([2, 0]); // same sampler: completion order
    // Step 0 trains: its slots are still held; the completed group 1 holds its own.
    expect(h.launched).toEqual([0, 1, 2, 3]);
    h.setSampler(1);
    const step1 = h.q.collect(2); // step 0 has trained: its two slots take builders on the new weights
    expect(h.launched).toEqual([0, 1, 2, 3, 4, 5]);
    await h.finish(4);
    await h.finish(5);
    const s1 = await step1;
    // Group 1 (step 0's weights) before 4 and 5 (step 1's); 5 carries over.
    expect(builders(s1.groups)).toEqual([1, 4]);
    expect(s1.groups.map((g) => g.samplingStep)).toEqual([0, 1]);
    h.setSampler(2);
    const step2 = h.q.collect(2);
    expect(h.launched).toEqual([0, 1, 2, 3, 4, 5, 6, 7]); // 3 in flight, 5 ready, 6 and 7 new: 4 slots
    // Builder 3 lands two steps stale (past max_steps_off_policy): trained first, not discarded.
    await h.finish(3);
    const s2 = await step2;
    expect(builders(s2.groups)).toEqual([3, 5]);
    expect(s2.groups.map((g) => 2 - g.samplingStep)).toEqual([2, 1]);
    h.setSampler(3);
    const rest = h.q.collect(2);
    for (const p of [...h.pending]) await h.finish(p.builder);
    const s3 = await rest;
    const trained = [s0, s1, s2, s3].flatMap((s) => builders(s.groups));
    expect([...trained].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect([...h.launched].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]); // each builder once, none past the 8th
  });

  it('a filtered group frees its slot at once and is handed back for error counting; the data running out ends with a smaller batch', async () => {
    const h = harness(5, 2);
    const step0 = h.q.collect(2);
    expect(h.launched).toEqual([0, 1]);
    await h.finish(0, false);
    expect(h.launched).toEqual([0, 1, 2]); // its slot took the next builder while the step waits
    await h.finish(1);
    await h.finish(2);
    const s0 = await step0;
    expect(builders(s0.groups)).toEqual([1, 2]);
    expect(builders(s0.dropped)).toEqual([0]);
    expect(h.q.finished).toBe(false); // builders 3 and 4 not yet handed out
    const step1 = h.q.collect(2);
    await h.finish(3);
    expect(h.q.finished).toBe(false); // 4 still running
    await h.finish(4);
    expect(h.q.finished).toBe(true);
    expect(builders((await step1).groups)).toEqual([3, 4]);
    const s2 = await h.q.collect(2);
    expect(s2.groups).toEqual([]); // nothing left: the workflow's last step had what remained
    expect(h.q.finished).toBe(true); // 0.6.1's rollout_workers_finished: no step's weights will be sampled again
  });

  it('streaming minibatches: a step takes groups in completion order, skips filtered ones, holds their slots until the next step, and ends short when the data runs out', async () => {
    // 2 groups a step in substeps of 1, max_steps_off_policy 1: 4 slots; 6 builders.
    const h = harness(6, 4);
    h.q.beginStep();
    expect(h.launched).toEqual([0, 1, 2, 3]);
    const sub0 = h.q.take(1);
    await h.finish(2, false); // filtered: skipped, its slot goes to builder 4 at once
    expect(h.launched).toEqual([0, 1, 2, 3, 4]);
    await h.finish(3);
    const s0 = await sub0;
    expect([builders(s0.groups), builders(s0.dropped)]).toEqual([[3], [2]]);
    const sub1 = h.q.take(1);
    await h.finish(1);
    await h.finish(0);
    expect(builders((await sub1).groups)).toEqual([1]); // completion order, not sampler or dataset order
    // The step trains 3 and 1: their slots stay taken (0 is ready and holds its own, 4 runs).
    expect(h.launched).toEqual([0, 1, 2, 3, 4]);
    h.setSampler(1);
    h.q.beginStep(); // the step's weights are out: its two slots take the last builder on them
    expect(h.launched).toEqual([0, 1, 2, 3, 4, 5]);
    expect(builders((await h.q.take(1)).groups)).toEqual([0]); // ready before anything else completed
    await h.finish(5);
    expect(builders((await h.q.take(1)).groups)).toEqual([5]);
    h.q.beginStep();
    const last = h.q.take(1);
    await h.finish(4, false);
    const s2 = await last;
    expect([s2.groups, builders(s2.dropped)]).toEqual([[], [4]]); // no group left: training ends
    expect(h.q.finished).toBe(true);
  });
});
