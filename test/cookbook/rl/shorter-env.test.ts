// The reference's preference/shorter env: the "shorter is better" preference model, its rewards on a
// constructed group (tournaments of preference-env.ts), the dataset of identical prompts, its
// registration by name and the shipped config.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { RLConfigSchema } from '../../../src/cookbook/config/rl.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import { buildRLDatasets } from '../../../src/cookbook/rl/datasets.js';
import { completionLength, SHORTER_PROMPT, ShorterPreferenceModel } from '../../../src/cookbook/rl/envs/shorter.js';
import { PairwisePreferenceGroupBuilder } from '../../../src/cookbook/rl/preference-env.js';
import { registeredRLDatasetNames } from '../../../src/cookbook/rl/registry.js';
import type { RolloutContext } from '../../../src/cookbook/rl/rollout-context.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';
import { traj, transition } from './helpers.js';

const root = path.join(import.meta.dirname, '..', '..', '..');
let tok: Tokenizer;
let renderer: Renderer;
beforeAll(async () => {
  tok = await getTokenizer('tiny-qwen3');
  renderer = getRenderer('qwen3', tok);
});

const shorter = new ShorterPreferenceModel();
const said = (content: string) => [{ role: 'assistant' as const, content }];
const pair = (a: string, b: string) => ({ prompt_conversation: SHORTER_PROMPT, completion_A: said(a), completion_B: said(b) });

describe('the shorter preference model', () => {
  it('prefers the shorter completion: 1 for B, −1 for A, 0 for equal lengths', async () => {
    expect(await shorter.score(pair('a long answer', 'short'))).toBe(1);
    expect(await shorter.score(pair('short', 'a long answer'))).toBe(-1);
    expect(await shorter.score(pair('abc', 'xyz'))).toBe(0);
  });
  it('counts characters (code points, as Python len), summed over the messages', () => {
    expect(completionLength(said('héllo 👋'))).toBe(7);
    expect(completionLength([...said('ab'), ...said('cde')])).toBe(5);
  });
});

describe('shorter group rewards', () => {
  const end = () => tok.encode('<|im_end|>', { addSpecialTokens: false });
  const text = (s: string) => tok.encode(s, { addSpecialTokens: false });

  it('a constructed group of four: mean win-minus-loss within chunks of 4, −1 without a stop sequence', async () => {
    const { train } = await buildRLDatasets({ kind: 'custom', name: 'shorter', args: { batch_size: 2, group_size: 4 } }, 'tiny-qwen3', { baseDir: root });
    const builder = (train.getBatch(0)[0] as PairwisePreferenceGroupBuilder).withContext({} as RolloutContext);
    expect(await builder.makeEnvs()).toHaveLength(4);
    const responses = [[...text('I am a model.'), ...end()], [...text('Hi'), ...end()], [...text('Hi'), ...end()], text('I am')];
    const group = responses.map((ac) => traj([transition([1], ac, { episodeDone: true })]));
    // Lengths 13, 2, 2, 4; all pairs both ways, so each player meets each other twice (6 matchups).
    // Player 0 loses all 6: −1. Players 1, 2 win 4 of 6 and tie 2: 4/6. Player 3 wins 2, loses 4: −2/6, then −1 format.
    const rewards = await builder.computeGroupRewards(group);
    expect(rewards.map(([r]) => r)).toEqual([-1, 4 / 6, 4 / 6, -2 / 6 - 1]);
    expect(rewards.map(([, m]) => m)).toEqual([
      { win_minus_loss: -1, format: 1 },
      { win_minus_loss: 4 / 6, format: 1 },
      { win_minus_loss: 4 / 6, format: 1 },
      { win_minus_loss: -2 / 6, format: 0 },
    ]);
    expect(builder.loggingTags()).toEqual(['pair_pref']);
  });

  it('a group of six plays in chunks of 4 and 2 (the reference\'s matchup_group_size)', async () => {
    const { train } = await buildRLDatasets({ kind: 'custom', name: 'shorter', args: { batch_size: 1, group_size: 6, tournament_pattern: 'all_pairs_one_way' } }, 'tiny-qwen3', { baseDir: root });
    const builder = (train.getBatch(0)[0] as PairwisePreferenceGroupBuilder).withContext({} as RolloutContext);
    const words = ['aaaa', 'a', 'aaa', 'aa', 'aaaaa', 'a'];
    const group = words.map((w) => traj([transition([1], [...text(w), ...end()], { episodeDone: true })]));
    // Chunk [0..3] one way: ranks by length a(1) > aa > aaa > aaaa; chunk [4, 5]: "a" beats "aaaaa".
    expect((await builder.computeGroupRewards(group)).map(([r]) => r)).toEqual([-1, 1, -1 / 3, 1 / 3, -1, 1]);
  });
});

describe('the shorter data set', () => {
  it('is registered by name: 1024 "Who are you?" prompts, no test set', async () => {
    expect(registeredRLDatasetNames()).toContain('shorter');
    const { train, test } = await buildRLDatasets({ kind: 'custom', name: 'shorter', args: {} }, 'tiny-qwen3', { baseDir: root });
    expect(test).toBeUndefined();
    expect(train.length).toBe(1024 / 32); // the reference's batch_size 32
    const batch = train.getBatch(5) as PairwisePreferenceGroupBuilder[];
    expect(batch).toHaveLength(32);
    expect(batch[0].opts).toMatchObject({ convoPrefix: [{ role: 'user', content: 'Who are you?' }], numEnvs: 16, tournamentPattern: 'all_pairs_both_ways', matchupGroupSize: 4 });
  });
  it('names the config path of a bad argument', async () => {
    await expect(buildRLDatasets({ kind: 'custom', name: 'shorter', args: { group_size: 0 } }, 'tiny-qwen3', { baseDir: root })).rejects.toThrow(/dataset\.args\.group_size/);
    await expect(buildRLDatasets({ kind: 'custom', name: 'shorter', args: { batch_size: 2048 } }, 'tiny-qwen3', { baseDir: root })).rejects.toThrow(/dataset\.args\.batch_size: 2048 exceeds/);
    await expect(buildRLDatasets({ kind: 'custom', name: 'shorter', args: { groups: 2 } }, 'tiny-qwen3', { baseDir: root })).rejects.toThrow(/dataset\.args/);
  });
  it('the shipped config parses, with the reference\'s compute_post_kl and eval_every', () => {
    const cfg = RLConfigSchema.parse(JSON.parse(readFileSync(path.join(root, 'configs', 'rl_shorter.json'), 'utf8')));
    expect(cfg).toMatchObject({ compute_post_kl: true, eval_every: 5, max_tokens: 64, recipe_name: 'recipe_preference_shorter' });
  });
});
