// Pairwise preference RL (reference rl/preference_envs.py): matchup pairs (goldens from the
// reference's get_pairs_chunked), reward aggregation with the format penalty, the env and group
// builder on a real renderer, and the dataset config.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import type { Comparison } from '../../../src/cookbook/preference/comparisons.js';
import type { PreferenceModel } from '../../../src/cookbook/preference/preference-model.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import { buildRLDatasets, RLDatasetConfigSchema } from '../../../src/cookbook/rl/datasets.js';
import type { RolloutContext } from '../../../src/cookbook/rl/rollout-context.js';
import { aggregateMatchups, getPairsChunked, PairwisePreferenceGroupBuilder, PreferenceEnv, type TournamentPattern } from '../../../src/cookbook/rl/preference-env.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';
import { traj, transition } from './helpers.js';

const root = path.join(import.meta.dirname, '..', '..', '..');
const pairsGoldens = JSON.parse(readFileSync(path.join(root, 'test', 'fixtures', 'preference_pairs_goldens.json'), 'utf8')) as Record<string, number[][]>;

let tok: Tokenizer;
let renderer: Renderer;
beforeAll(async () => {
  tok = await getTokenizer('tiny-qwen3');
  renderer = getRenderer('qwen3', tok);
});

describe('tournament pairs', () => {
  it.each(Object.entries(pairsGoldens))('%s matches the reference', (key, expected) => {
    const [n, pattern, chunk] = key.split('-');
    expect(getPairsChunked(Number(n), pattern as TournamentPattern, Number(chunk))).toEqual(expected);
  });
  it('refuses an unknown pattern and a chunk size below 1', () => {
    expect(() => getPairsChunked(4, 'round_robin' as TournamentPattern, 2)).toThrow(/Invalid tournament pattern/);
    expect(() => getPairsChunked(4, 'all_pairs_one_way', 0)).toThrow(/chunk size/);
  });
});

describe('reward aggregation', () => {
  it('mean win-minus-loss per player plus the format penalty (valid − 1)', () => {
    // Players 0..2 one way: (0,1) B wins, (0,2) tie, (1,2) A wins.
    const out = aggregateMatchups([[0, 1], [0, 2], [1, 2]], [1, 0, -1], [true, false, true]);
    expect(out).toEqual([
      [-0.5, { win_minus_loss: -0.5, format: 1 }],
      [0, { win_minus_loss: 1, format: 0 }],
      [-0.5, { win_minus_loss: -0.5, format: 1 }],
    ]);
  });
  it('a player with no matchup scores 0 (only its format counts)', () => {
    expect(aggregateMatchups([], [], [false])).toEqual([[-1, { win_minus_loss: 0, format: 0 }]]);
  });
});

describe('PreferenceEnv and PairwisePreferenceGroupBuilder', () => {
  const prompt = [{ role: 'user' as const, content: 'Say hi.' }];
  const end = () => tok.encode('<|im_end|>', { addSpecialTokens: false });
  const text = (s: string) => tok.encode(s, { addSpecialTokens: false });

  it('the env shows the prompt and ends after one step with reward 0', async () => {
    const env = new PreferenceEnv(prompt, renderer);
    const init = await env.initialObservation();
    expect('ob' in init && modelInputToInts(init.ob)).toEqual(modelInputToInts(renderer.buildGenerationPrompt(prompt)));
    expect(await env.step()).toMatchObject({ reward: 0, episodeDone: true });
  });

  it('grades a group by matchups of its decoded responses, in matchup order', async () => {
    const seen: Comparison[] = [];
    // Prefers the longer answer; a tie when equal.
    const model: PreferenceModel = {
      score: async (c) => {
        seen.push(c);
        const len = (m: Comparison['completion_A']) => String(m[0].content).length;
        return Math.sign(len(c.completion_B) - len(c.completion_A));
      },
    };
    const unbound = new PairwisePreferenceGroupBuilder({ convoPrefix: prompt, policyRenderer: renderer, tournamentPattern: 'all_pairs_both_ways', preferenceModel: async () => model, numEnvs: 3 });
    const builder = unbound.withContext({} as RolloutContext);
    expect(await builder.makeEnvs()).toHaveLength(3);
    const responses = [[...text('hi'), ...end()], [...text('hello there'), ...end()], text('hey you')];
    const group = responses.map((ac) => traj([transition([1], ac, { episodeDone: true })]));
    const rewards = await builder.computeGroupRewards(group);
    expect(seen.map((c) => [c.completion_A[0].content, c.completion_B[0].content])).toEqual([
      ['hi', 'hello there'], ['hi', 'hey you'], ['hello there', 'hi'], ['hello there', 'hey you'], ['hey you', 'hi'], ['hey you', 'hello there'],
    ]);
    expect(seen[0].prompt_conversation).toEqual(prompt);
    // wins−losses over 4 matchups each: hi −4, hello there +4, hey you 0; "hey you" has no stop sequence.
    expect(rewards).toEqual([
      [-1, { win_minus_loss: -1, format: 1 }],
      [1, { win_minus_loss: 1, format: 1 }],
      [-1, { win_minus_loss: 0, format: 0 }],
    ]);
    expect(builder.loggingTags()).toEqual(['pair_pref']);
  });
});

describe('pairwise_preference dataset config', () => {
  const cfg = {
    kind: 'pairwise_preference' as const,
    file_path: 'data/example_preferences.jsonl',
    batch_size: 8,
    group_size: 4,
    preference_model: { rm_weights_path: 'tinker://rm/sampler_weights/final', renderer_name: 'qwen3_disable_thinking' },
  };
  it('defaults as the reference (all pairs both ways, matchups in chunks of 4)', () => {
    expect(RLDatasetConfigSchema.parse(cfg)).toMatchObject({ tournament_pattern: 'all_pairs_both_ways', matchup_group_size: 4 });
    const bad = RLDatasetConfigSchema.safeParse({ ...cfg, tournament_pattern: 'swiss' });
    expect(bad.error?.issues[0].path).toEqual(['tournament_pattern']);
    expect(RLDatasetConfigSchema.safeParse({ ...cfg, preference_model: {} }).error?.issues[0].path).toEqual(['preference_model', 'rm_weights_path']);
  });
  it('batches the file\'s prompts in order; grading needs a worker\'s rollout context', async () => {
    const { train } = await buildRLDatasets(cfg, 'tiny-qwen3', { baseDir: root });
    expect(train.length).toBe(12);
    const first = train.getBatch(1)[0] as PairwisePreferenceGroupBuilder;
    const row9 = JSON.parse(readFileSync(path.join(root, 'data', 'example_preferences.jsonl'), 'utf8').split('\n')[8]);
    expect(first.opts.convoPrefix).toEqual(row9.prompt_conversation ?? row9.comparison.prompt_conversation);
    expect(first.opts.numEnvs).toBe(4);
    const group = [traj([transition([1], [2], { episodeDone: true })])];
    await expect(first.computeGroupRewards(group)).rejects.toThrow(/needs the rollout context of a worker/);
  });
});
