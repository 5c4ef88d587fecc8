// The reference's recipes/preference/shorter: pairwise preference RL with a fixed preference model
// that prefers the shorter completion (counted in characters). Every prompt is the same "Who are
// you?" (1024 dummy rows, no test set); the group rewards come from preference-env.ts's
// tournaments (mean win-minus-loss, minus 1 for a response without a stop sequence).
import { z } from 'zod';
import type { Comparison } from '../../preference/comparisons.js';
import type { PreferenceModel } from '../../preference/preference-model.js';
import type { Message, Renderer } from '../../renderers/types.js';
import { ConfigurationError } from '../../errors.js';
import { PairwisePreferenceGroupBuilder, TOURNAMENT_PATTERNS } from '../preference-env.js';
import type { EnvGroupBuilder, RLDataset } from '../types.js';
import { parseEnvArgs } from './args.js';

export const SHORTER_PROMPT: Message[] = [{ role: 'user', content: 'Who are you?' }];
/** The reference's DUMMY_DATASET: 1024 rows, each the same comparison prompt. */
export const SHORTER_DATASET_ROWS = 1024;

/**
 * Python's `len(message["content"])`: code points of a string; of structured content, the number
 * of parts (the reference's count, kept as it is).
 */
function contentLength(message: Message): number {
  const c = message.content;
  return typeof c === 'string' ? [...c].length : c.length;
}

export function completionLength(completion: Message[]): number {
  return completion.reduce((n, m) => n + contentLength(m), 0);
}

/** 1 when B is shorter (B preferred), −1 when A is shorter, 0 for equal lengths. */
export class ShorterPreferenceModel implements PreferenceModel {
  async score(comparison: Comparison): Promise<number> {
    const a = completionLength(comparison.completion_A);
    const b = completionLength(comparison.completion_B);
    return a > b ? 1.0 : b > a ? -1.0 : 0.0;
  }
}

export const ShorterArgsSchema = z.strictObject({
  /** Prompts (groups) per batch: the reference's CLI batch_size. */
  batch_size: z.int().positive().default(32),
  group_size: z.int().positive().default(16),
  tournament_pattern: z.enum(TOURNAMENT_PATTERNS).default('all_pairs_both_ways'),
  /** The reference's PairwisePreferenceGroupBuilder default (its dataset does not set it). */
  matchup_group_size: z.int().positive().default(4),
});
export type ShorterArgs = z.output<typeof ShorterArgsSchema>;

export class ShorterDataset implements RLDataset {
  private readonly model = new ShorterPreferenceModel();

  constructor(
    readonly renderer: Renderer,
    readonly args: ShorterArgs,
  ) {}

  get length(): number {
    return Math.floor(SHORTER_DATASET_ROWS / this.args.batch_size);
  }

  getBatch(_index: number): EnvGroupBuilder[] {
    return Array.from(
      { length: this.args.batch_size },
      () =>
        new PairwisePreferenceGroupBuilder({
          convoPrefix: SHORTER_PROMPT,
          policyRenderer: this.renderer,
          tournamentPattern: this.args.tournament_pattern,
          preferenceModel: async () => this.model,
          numEnvs: this.args.group_size,
          matchupGroupSize: this.args.matchup_group_size,
        }),
    );
  }
}

export function buildShorterDatasets(args: Record<string, unknown>, renderer: Renderer): { train: RLDataset } {
  const a = parseEnvArgs(ShorterArgsSchema, args, 'shorter');
  if (a.batch_size > SHORTER_DATASET_ROWS) throw new ConfigurationError(`dataset.args.batch_size: ${a.batch_size} exceeds the ${SHORTER_DATASET_ROWS} prompts of the shorter data set`);
  return { train: new ShorterDataset(renderer, a) };
}
