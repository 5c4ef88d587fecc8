// RL on binary forecasts (reference 0.6.1 recipes/forecasting/env.py): one turn per market, the
// answer's last line parsed as a probability, the reward 1 − (p − y)² (0 for an unparsable
// answer, a truncated one or a broken frame). Every rollout reports brier_reward, accuracy and
// format_valid as group metrics; evaluation adds the ROC AUC of the whole validation set per tag
// (the reference's ForecastEvaluator), through the dataset's evalSetMetrics.
import { homedir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { ConfigurationError } from '../../../errors.js';
import { getTextContent } from '../../../renderers/content.js';
import type { Message, Renderer } from '../../../renderers/types.js';
import { EnvFromMessageEnv, type MessageEnv, type MessageStepResult } from '../../message-env.js';
import { BaseEnvGroupBuilder, type Env, type EnvGroupBuilder, type Metrics, type RLDataset, type Trajectory, type TrajectoryGroup } from '../../types.js';
import { parseEnvArgs } from '../args.js';
import {
  DEFAULT_MAX_TRAIN_QUESTIONS,
  DEFAULT_MAX_VALIDATION_QUESTIONS,
  DEFAULT_SPLIT_DATE,
  loadProphetArenaSplit,
  type ForecastExample,
} from './data.js';
import { parseUtcDatetime } from './iso-datetime.js';
import { casefold } from './casefold.js';
import { formatForecast, parseForecast, renderPrompt, scoreForecast, type ForecastScores } from './prompt.js';

const SCORE_KEYS = ['brier_reward', 'accuracy', 'format_valid'] as const;

export class ForecastEnv implements MessageEnv {
  readonly exampleId: string;
  constructor(readonly example: ForecastExample) {
    this.exampleId = `${example.submission_id}:${example.market}`;
  }

  async initialObservation(): Promise<Message[]> {
    return [{ role: 'user', content: renderPrompt(this.example) }];
  }

  async step(message: Message): Promise<MessageStepResult> {
    const probability = parseForecast(getTextContent(message));
    const scores = scoreForecast(probability, this.example.outcome);
    return {
      reward: scores.brier_reward,
      episodeDone: true,
      nextMessages: [],
      logs: {
        question_id: this.exampleId,
        forecast: probability === null ? 'invalid' : formatForecast(probability),
        outcome: this.example.outcome,
        ...scores,
      },
    };
  }
}

/** The scores a rollout's step logged; zeros for one that never got there (truncated, unparsable). */
export function rolloutScores(trajectory: Trajectory, outcome: number): ForecastScores {
  const logged = trajectory.transitions.find((t) => 'brier_reward' in t.logs)?.logs;
  if (!logged) return scoreForecast(null, outcome);
  return Object.fromEntries(SCORE_KEYS.map((k) => [k, Number(logged[k])])) as unknown as ForecastScores;
}

export class ForecastGroupBuilder extends BaseEnvGroupBuilder {
  constructor(
    readonly example: ForecastExample,
    readonly renderer: Renderer,
    readonly groupSize: number,
  ) {
    super();
  }

  async makeEnvs(): Promise<Env[]> {
    return Array.from({ length: this.groupSize }, () => new EnvFromMessageEnv(this.renderer, new ForecastEnv(this.example), { failedParseReward: 0.0, contextOverflowReward: 0.0 }));
  }

  override async computeGroupRewards(trajectoryGroup: Trajectory[]): Promise<Array<[number, Metrics]>> {
    return trajectoryGroup.map((t) => [0.0, { ...rolloutScores(t, this.example.outcome) }]);
  }

  override loggingTags(): string[] {
    return ['prophet-arena', casefold(this.example.category).replaceAll(' ', '-')];
  }
}

/** Area under the ROC curve of (score, outcome) pairs, ties at their average rank; null with one class. */
export function rocAuc(pairs: ReadonlyArray<readonly [number, number]>): number | null {
  const nPos = pairs.filter(([, y]) => y === 1).length;
  const nNeg = pairs.length - nPos;
  if (nPos === 0 || nNeg === 0) return null;
  const ordered = [...pairs].sort((a, b) => a[0] - b[0]);
  const ranks = new Array<number>(ordered.length).fill(0);
  for (let i = 0; i < ordered.length; ) {
    let j = i;
    while (j + 1 < ordered.length && ordered[j + 1][0] === ordered[i][0]) j++;
    for (let k = i; k <= j; k++) ranks[k] = (i + j) / 2 + 1;
    i = j + 1;
  }
  let rankSumPos = 0;
  ordered.forEach(([, y], i) => {
    if (y === 1) rankSumPos += ranks[i];
  });
  return (rankSumPos - (nPos * (nPos + 1)) / 2) / (nPos * nNeg);
}

/**
 * The evaluator's set-wide metric: `env/<tag>/auc` for "all" and each logging tag, over every
 * parsed forecast (as logged, to six decimals); a tag whose forecasts share one outcome has none.
 */
export function forecastAucMetrics(groups: readonly TrajectoryGroup[], tagsPerGroup: readonly string[][]): Metrics {
  const pairsByTag = new Map<string, Array<[number, number]>>();
  groups.forEach((group, g) => {
    const tags = ['all', ...(tagsPerGroup[g] ?? [])];
    for (const trajectory of group.trajectoriesG) {
      for (const { logs } of trajectory.transitions) {
        if (!('forecast' in logs) || logs.forecast === 'invalid') continue;
        const pair: [number, number] = [Number(logs.forecast), Math.trunc(Number(logs.outcome))];
        for (const tag of tags) {
          const list = pairsByTag.get(tag);
          if (list) list.push(pair);
          else pairsByTag.set(tag, [pair]);
        }
      }
    }
  });
  const out: Metrics = {};
  for (const [tag, pairs] of pairsByTag) {
    const auc = rocAuc(pairs);
    if (auc !== null) out[`env/${tag}/auc`] = auc;
  }
  return out;
}

/** Batches of distinct questions in order, the whole list repeated `epochs` times. */
export class ForecastRLDataset implements RLDataset {
  readonly examples: readonly ForecastExample[];
  constructor(
    examples: readonly ForecastExample[],
    readonly batchSize: number,
    readonly groupSize: number,
    readonly renderer: Renderer,
    readonly epochs = 1,
  ) {
    if (batchSize <= 0 || groupSize <= 0 || epochs <= 0) throw new ConfigurationError('batch_size, group_size, and epochs must be positive');
    this.examples = [...examples];
  }

  private get batchesPerEpoch(): number {
    return Math.ceil(this.examples.length / this.batchSize);
  }

  get length(): number {
    return this.epochs * this.batchesPerEpoch;
  }

  getBatch(index: number): EnvGroupBuilder[] {
    if (!(index >= 0 && index < this.length)) throw new RangeError(`batch index ${index} outside [0, ${this.length})`);
    const start = (index % this.batchesPerEpoch) * this.batchSize;
    return this.examples.slice(start, start + this.batchSize).map((e) => new ForecastGroupBuilder(e, this.renderer, this.groupSize));
  }

  evalSetMetrics(groups: readonly TrajectoryGroup[], tagsPerGroup: readonly string[][]): Metrics {
    return forecastAucMetrics(groups, tagsPerGroup);
  }
}

const cap = (fallback: number) => z.int().positive().nullable().default(fallback);

/** The recipe's defaults (train.py / ProphetArenaRLDatasetBuilder). */
export const ForecastingArgsSchema = z.strictObject({
  groups_per_batch: z.int().positive().default(16),
  group_size: z.int().positive().default(32),
  validation_group_size: z.int().positive().default(8),
  train_epochs: z.int().positive().default(3),
  /** The Prophet Arena CSV: absolute, under `~`, or relative to the repository root; see docs/forecasting.md. */
  data_path: z.string().min(1),
  split_date: z.string().min(1).default(DEFAULT_SPLIT_DATE),
  max_train_questions: cap(DEFAULT_MAX_TRAIN_QUESTIONS),
  max_validation_questions: cap(DEFAULT_MAX_VALIDATION_QUESTIONS),
  seed: z.int().default(0),
  /** Evaluate on the validation split (the recipe's ForecastEvaluator) at eval_every. */
  include_validation: z.boolean().default(true),
});

export function buildForecastingDatasets(args: Record<string, unknown>, renderer: Renderer, repoRoot: string): { train: RLDataset; test?: RLDataset } {
  const a = parseEnvArgs(ForecastingArgsSchema, args, 'forecasting');
  let splitTime;
  try {
    splitTime = parseUtcDatetime(a.split_date);
  } catch (err) {
    throw new ConfigurationError(`dataset.args.split_date: invalid ISO datetime ${JSON.stringify(a.split_date)} (${(err as Error).message}) (environment "forecasting")`);
  }
  // `~` is the home directory (the reference's expanduser); other relative paths are the repository's.
  const file = /^~(?=$|\/)/.test(a.data_path) ? path.join(homedir(), a.data_path.slice(1)) : path.resolve(repoRoot, a.data_path);
  const split = loadProphetArenaSplit(
    file,
    { splitTime, maxTrainQuestions: a.max_train_questions, maxValidationQuestions: a.max_validation_questions, seed: a.seed },
    a.data_path,
  );
  return {
    train: new ForecastRLDataset(split.train, a.groups_per_batch, a.group_size, renderer, a.train_epochs),
    test: a.include_validation ? new ForecastRLDataset(split.validation, a.groups_per_batch, a.validation_group_size, renderer) : undefined,
  };
}
