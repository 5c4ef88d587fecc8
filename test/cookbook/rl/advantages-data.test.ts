// §2.4 advantages (float32 examples), §2.5 datum assembly (multiturn_weight_assignment_test
// cases), mask removal and split_list.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { computeAdvantages, removeConstantRewardGroups } from '../../../src/cookbook/rl/advantages.js';
import { assembleTrainingData, removeMask, splitList, trajectoryToData } from '../../../src/cookbook/rl/data.js';
import { PARSE_ERROR_MASKED_METRIC_KEY } from '../../../src/cookbook/rl/types.js';
import { groupWithRewards, traj, transition } from './helpers.js';

const goldens = JSON.parse(readFileSync(new URL('../../fixtures/rl_kl_goldens.json', import.meta.url), 'utf8'));

describe('computeAdvantages (float32)', () => {
  it('matches the spec examples exactly', () => {
    const [a, b] = computeAdvantages([groupWithRewards([1, 0, 0]), groupWithRewards([0.9, 1.0, -0.1, 0.0])]);
    expect(a).toEqual([0.6666666269302368, -0.3333333432674408, -0.3333333432674408]);
    expect(b).toEqual([0.44999998807907104, 0.550000011920929, -0.550000011920929, -0.44999998807907104]);
  });

  it('matches numpy float32 goldens, constant groups and singletons give zeros', () => {
    const groups = (goldens.rewards as number[][]).map((r) => groupWithRewards(r));
    expect(computeAdvantages(groups)).toEqual(goldens.group_advantages);
  });

  it('adds final group rewards to step rewards', () => {
    const [a] = computeAdvantages([groupWithRewards([0, 0], [1, 0])]);
    expect(a).toEqual([0.5, -0.5]);
  });
});

describe('removeConstantRewardGroups', () => {
  it('keeps mixed groups only', () => {
    const mixed = groupWithRewards([1, 0]);
    expect(removeConstantRewardGroups([groupWithRewards([1, 1]), mixed, groupWithRewards([0, 0])])).toEqual([mixed]);
  });
  it('keeps the first group and warns when all are constant', () => {
    const first = groupWithRewards([1, 1]);
    const warnings: string[] = [];
    expect(removeConstantRewardGroups([first, groupWithRewards([0, 0])], (w) => warnings.push(w))).toEqual([first]);
    expect(warnings[0]).toMatch(/All rewards are uniform/);
  });
});

const lf = (d: ReturnType<typeof trajectoryToData>[number], k: string) => d.loss_fn_inputs[k].data;

describe('trajectoryToData (multiturn weight assignment)', () => {
  it('3-turn prefix trajectory becomes one datum with the action mask', () => {
    const t = traj([
      transition([1, 2, 3, 4, 5], [10, 11, 12]),
      transition([1, 2, 3, 4, 5, 10, 11, 12, 20, 21], [30, 31]),
      transition([1, 2, 3, 4, 5, 10, 11, 12, 20, 21, 30, 31, 40], [50, 51, 52]),
    ]);
    const data = trajectoryToData(t, 0.5);
    expect(data).toHaveLength(1);
    expect(lf(data[0], 'mask')).toEqual([0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1]);
    expect(lf(data[0], 'advantages')).toEqual([0, 0, 0, 0, 0.5, 0.5, 0.5, 0, 0, 0.5, 0.5, 0, 0.5, 0.5, 0.5]);
    expect(lf(data[0], 'target_tokens')).toEqual([2, 3, 4, 5, 10, 11, 12, 20, 21, 30, 31, 40, 50, 51, 52]);
    expect(modelInputToInts(data[0].model_input)).toEqual([1, 2, 3, 4, 5, 10, 11, 12, 20, 21, 30, 31, 40, 50, 51]);
    expect(data[0].loss_fn_inputs.target_tokens.dtype).toBe('int64');
    for (const k of ['logprobs', 'advantages', 'mask']) expect(data[0].loss_fn_inputs[k].dtype).toBe('float32');
  });

  it('single turn: mask [0,0,1,1,1] and sampled logprobs in place (float32)', () => {
    const data = trajectoryToData(traj([transition([1, 2, 3], [10, 11, 12], { logprobs: [-0.1, -0.2, -0.3] })]), 1);
    expect(data).toHaveLength(1);
    expect(lf(data[0], 'mask')).toEqual([0, 0, 1, 1, 1]);
    expect(lf(data[0], 'logprobs')).toEqual([0, 0, Math.fround(-0.1), Math.fround(-0.2), Math.fround(-0.3)]);
  });

  it('a non-prefix observation starts a second datum', () => {
    const data = trajectoryToData(traj([transition([1, 2, 3], [10, 11]), transition([7, 8], [20])]), 1);
    expect(data).toHaveLength(2);
    expect(lf(data[0], 'mask')).toEqual([0, 0, 1, 1]);
    expect(lf(data[1], 'mask')).toEqual([0, 1]);
    expect(modelInputToInts(data[1].model_input)).toEqual([7, 8]);
  });

  it('a parse-error-masked turn zeroes mask and advantage for that turn only', () => {
    const data = trajectoryToData(
      traj([
        transition([1, 2], [10, 11]),
        transition([1, 2, 10, 11, 3], [20, 21], { metrics: { [PARSE_ERROR_MASKED_METRIC_KEY]: 1.0 } }),
        transition([1, 2, 10, 11, 3, 20, 21, 4], [30]),
      ]),
      2,
    );
    expect(data).toHaveLength(1);
    expect(lf(data[0], 'mask')).toEqual([0, 1, 1, 0, 0, 0, 0, 1]);
    expect(lf(data[0], 'advantages')).toEqual([0, 2, 2, 0, 0, 0, 0, 2]);
  });

  it('a synthetic empty transition contributes nothing', () => {
    expect(trajectoryToData(traj([transition([], [], { logprobs: [] })]), 1)).toEqual([]);
  });
});

describe('assembleTrainingData', () => {
  it('flattens groups then trajectories with metadata', () => {
    const groups = [groupWithRewards([1, 0]), groupWithRewards([0.5])];
    const { data_D, metadata_D } = assembleTrainingData(groups, computeAdvantages(groups));
    expect(metadata_D).toEqual([
      { group_idx: 0, traj_idx: 0 },
      { group_idx: 0, traj_idx: 1 },
      { group_idx: 1, traj_idx: 0 },
    ]);
    expect(data_D[0].loss_fn_inputs.advantages.data).toEqual([0, 0, 0.5, 0.5]);
    expect(data_D[1].loss_fn_inputs.advantages.data).toEqual([0, 0, -0.5, -0.5]);
  });

  it('rejects mismatched advantages', () => {
    expect(() => assembleTrainingData([groupWithRewards([1, 0])], [[0]])).toThrow(/advantages/);
  });
});

describe('removeMask and splitList', () => {
  it('drops only the mask', () => {
    const [d] = trajectoryToData(traj([transition([1, 2], [3])]), 1);
    const sent = removeMask(d);
    expect(Object.keys(sent.loss_fn_inputs).sort()).toEqual(['advantages', 'logprobs', 'target_tokens']);
    expect(Object.keys(d.loss_fn_inputs)).toContain('mask');
  });
  it('uses floor(linspace) boundaries (n=5, k=2 → [2,3]) and rejects k=0', () => {
    expect(splitList([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4, 5]]);
    expect(splitList([1, 2, 3, 4, 5, 6, 7], 3).map((x) => x.length)).toEqual([2, 2, 3]);
    expect(() => splitList([], 0)).toThrow();
  });
});
