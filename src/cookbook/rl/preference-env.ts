// Pairwise preference RL (the reference's rl/preference_envs.py): each prompt of a comparisons file
// is a group of single-turn envs whose step reward is 0; once the group is rolled out, a preference
// model judges matchups between its completions (tournament patterns, chunked so the count stays
// linear in the group size) and each completion's reward is its mean win-minus-loss, minus 1 when
// it did not end with a stop sequence.

import { z } from 'zod';
import { CookbookError } from '../errors.js';
import { modelInputFromInts } from '../model-input.js';
import type { Comparison, ComparisonRow } from '../preference/comparisons.js';
import type { PreferenceModel } from '../preference/preference-model.js';
import type { Message, Renderer } from '../renderers/types.js';
import type { ContextualEnvGroupBuilder, RolloutContext } from './rollout-context.js';
import { BaseEnvGroupBuilder, type Env, type EnvGroupBuilder, type InitialObservation, type Metrics, type RLDataset, type StepResult, type Trajectory } from './types.js';

export const TOURNAMENT_PATTERNS = ['all_pairs_both_ways', 'all_pairs_one_way'] as const;
export type TournamentPattern = (typeof TOURNAMENT_PATTERNS)[number];

export const PairwisePreferenceDatasetConfigSchema = z.strictObject({
  kind: z.literal('pairwise_preference'),
  /** Comparisons JSONL (preference/comparisons.ts); each row's prompt_conversation is one prompt. */
  file_path: z.string().min(1),
  /** Prompts (groups) per batch; batches are the file's rows in order, a last partial one dropped. */
  batch_size: z.int().positive(),
  group_size: z.int().positive(),
  tournament_pattern: z.enum(TOURNAMENT_PATTERNS).default('all_pairs_both_ways'),
  /** Matchups are played within consecutive chunks of this many completions. */
  matchup_group_size: z.int().positive().default(4),
  /** The reference's PreferenceModelBuilderFromChatRenderer. */
  preference_model: z.strictObject({
    /** Sampler weights of the reward model (`tinker://…/sampler_weights/…`); in a pipeline "@stage:<i>/sampler". */
    rm_weights_path: z.string().min(1),
    /** Renderer the reward model was trained with; default: the policy's. */
    renderer_name: z.string().min(1).nullable().default(null),
    /** Model whose tokenizer the reward model uses; default: the policy's. */
    model_name: z.string().min(1).nullable().default(null),
  }),
});
export type PairwisePreferenceDatasetConfig = z.output<typeof PairwisePreferenceDatasetConfigSchema>;

/** The reference's get_pairs: ordered pairs (i ≠ j) both ways, or i < j one way. */
export function getPairs(n: number, pattern: TournamentPattern): Array<[number, number]> {
  if (!TOURNAMENT_PATTERNS.includes(pattern)) throw new RangeError(`Invalid tournament pattern: ${String(pattern)}`);
  const out: Array<[number, number]> = [];
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (pattern === 'all_pairs_both_ways' ? i !== j : j > i) out.push([i, j]);
    }
  }
  return out;
}

/** Pairs within consecutive chunks of `chunkSize` players, as indices of the whole group. */
export function getPairsChunked(n: number, pattern: TournamentPattern, chunkSize: number): Array<[number, number]> {
  if (!Number.isInteger(chunkSize) || chunkSize < 1) throw new RangeError(`chunk size must be a positive integer, got ${chunkSize}`);
  const out: Array<[number, number]> = [];
  for (let start = 0; start < n; start += chunkSize) {
    for (const [i, j] of getPairs(Math.min(start + chunkSize, n) - start, pattern)) out.push([start + i, start + j]);
  }
  return out;
}

/**
 * Rewards from matchup results: `rewards[k]` is the preference model's score of pair k (positive:
 * the second player won). Each player's mean win-minus-loss plus the format penalty (valid − 1).
 */
export function aggregateMatchups(pairs: Array<[number, number]>, rewards: number[], isValid: boolean[]): Array<[number, Metrics]> {
  if (pairs.length !== rewards.length) throw new RangeError(`${pairs.length} matchups but ${rewards.length} results`);
  const winMinusLoss = isValid.map(() => 0.0);
  const count = isValid.map(() => 0);
  pairs.forEach(([i, j], k) => {
    winMinusLoss[j] += rewards[k];
    winMinusLoss[i] -= rewards[k];
    count[j] += 1;
    count[i] += 1;
  });
  const formatCoef = 1.0;
  return isValid.map((valid, g) => {
    const mean = count[g] > 0 ? winMinusLoss[g] / count[g] : 0.0;
    return [mean + formatCoef * (Number(valid) - 1.0), { win_minus_loss: mean, format: Number(valid) }];
  });
}

/** Shows the prompt, ends after one response with reward 0 (the group is graded as a whole). */
export class PreferenceEnv implements Env {
  constructor(
    readonly convoPrefix: Message[],
    readonly policyRenderer: Renderer,
  ) {}

  get stopCondition(): string[] | number[] {
    return this.policyRenderer.getStopSequences();
  }

  async initialObservation(): Promise<InitialObservation> {
    return { ob: this.policyRenderer.buildGenerationPrompt(this.convoPrefix), stopCondition: this.stopCondition };
  }

  async step(): Promise<StepResult> {
    return { reward: 0, episodeDone: true, nextObservation: modelInputFromInts([]), nextStopCondition: this.stopCondition, metrics: {} };
  }
}

export interface PairwisePreferenceGroupOptions {
  convoPrefix: Message[];
  policyRenderer: Renderer;
  tournamentPattern: TournamentPattern;
  /** Built when the group is graded, on the rollout's side samplers (it samples the reward model's weights). */
  preferenceModel: (ctx: RolloutContext) => Promise<PreferenceModel>;
  numEnvs: number;
  matchupGroupSize?: number;
}

export class PairwisePreferenceGroupBuilder extends BaseEnvGroupBuilder implements ContextualEnvGroupBuilder {
  readonly matchupGroupSize: number;

  constructor(
    readonly opts: PairwisePreferenceGroupOptions,
    private readonly ctx?: RolloutContext,
  ) {
    super();
    this.matchupGroupSize = opts.matchupGroupSize ?? 4;
  }

  withContext(ctx: RolloutContext): PairwisePreferenceGroupBuilder {
    return new PairwisePreferenceGroupBuilder(this.opts, ctx);
  }

  async makeEnvs(): Promise<Env[]> {
    return Array.from({ length: this.opts.numEnvs }, () => new PreferenceEnv(this.opts.convoPrefix, this.opts.policyRenderer));
  }

  /** The decoded response and whether it ended with a stop sequence (the reference's strict format). */
  responseMessage(trajectory: Trajectory): { messages: Message[]; valid: boolean } {
    const parsed = this.opts.policyRenderer.parseResponse(trajectory.transitions[0].ac.tokens);
    return { messages: [parsed.message], valid: parsed.termination === 'stop_sequence' };
  }

  comparison(messagesI: Message[], messagesJ: Message[]): Comparison {
    return { prompt_conversation: this.opts.convoPrefix, completion_A: messagesI, completion_B: messagesJ };
  }

  override async computeGroupRewards(trajectoryGroup: Trajectory[]): Promise<Array<[number, Metrics]>> {
    if (!trajectoryGroup.every((t) => t.transitions.length === 1)) throw new RangeError('pairwise preference groups are single-turn: every trajectory needs exactly one transition');
    const responses = trajectoryGroup.map((t) => this.responseMessage(t));
    const pairs = getPairsChunked(responses.length, this.opts.tournamentPattern, this.matchupGroupSize);
    if (!this.ctx) throw new CookbookError('a pairwise preference group is graded by a reward model: it needs the rollout context of a worker (bind it with withContext)');
    const model = await this.opts.preferenceModel(this.ctx);
    // One after another, as the reference: the sampling seeds follow the matchup order.
    const rewards: number[] = [];
    for (const [i, j] of pairs) rewards.push(await model.score(this.comparison(responses[i].messages, responses[j].messages)));
    return aggregateMatchups(pairs, rewards, responses.map((r) => r.valid));
  }

  override loggingTags(): string[] {
    return ['pair_pref'];
  }
}

export interface PairwisePreferenceDatasetOptions {
  batchSize: number;
  groupSize: number;
  tournamentPattern: TournamentPattern;
  matchupGroupSize: number;
  /** The preference model that grades a group, built on the group rollout's side samplers. */
  preferenceModel: (ctx: RolloutContext) => Promise<PreferenceModel>;
}

/** Batch i is rows [i·batch_size, (i+1)·batch_size) of the file, in file order, as the reference. */
export class PairwisePreferenceDataset implements RLDataset {
  constructor(
    readonly rows: ComparisonRow[],
    readonly renderer: Renderer,
    readonly opts: PairwisePreferenceDatasetOptions,
  ) {}

  get length(): number {
    return Math.floor(this.rows.length / this.opts.batchSize);
  }

  getBatch(index: number): EnvGroupBuilder[] {
    const { batchSize } = this.opts;
    return this.rows.slice(index * batchSize, (index + 1) * batchSize).map(
      (row) =>
        new PairwisePreferenceGroupBuilder({
          convoPrefix: row.comparison.prompt_conversation,
          policyRenderer: this.renderer,
          tournamentPattern: this.opts.tournamentPattern,
          preferenceModel: this.opts.preferenceModel,
          numEnvs: this.opts.groupSize,
          matchupGroupSize: this.opts.matchupGroupSize,
        }),
    );
  }
}
