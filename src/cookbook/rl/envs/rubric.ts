// Rubric-graded rewards (reference recipes/rubric): the policy answers a conversation, and a grader
// model samples a verdict per rubric item that is parsed into a score (`<score>…</score>` by
// default). The reward is format_coef·(format − 1) + the mean rubric score. Grading runs inside the
// env's step, so it is batched with the group and retried with it like any rollout; the grader's
// seeds come from the rollout context per (episode, rubric item).
import path from 'node:path';
import { z } from 'zod';
import { ConfigurationError, DataFormatError } from '../../errors.js';
import { getTextContent } from '../../renderers/content.js';
import type { Message, Renderer } from '../../renderers/types.js';
import type { MessageCompleter } from '../completers.js';
import type { ContextualEnvGroupBuilder, RolloutContext, SideSamplerSpec } from '../rollout-context.js';
import { BaseEnvGroupBuilder, type Action, type Env, type EnvGroupBuilder, type InitialObservation, type RLDataset, type StepResult } from '../types.js';
import { parseEnvArgs, pyFloat } from './args.js';
import { readJsonlRows } from './jsonl-rows.js';

export const DEFAULT_EXTRACTION_REGEX = '<score>(.*?)</score>';
export const DEFAULT_GRADER_OUTPUT_FORMAT_INSTRUCTION = 'Please output your score between 0 and 1 wrapped in <score> ... </score>';

export const RubricSchema = z.strictObject({
  rubric_str: z.string().min(1),
  extraction_regex: z.string().min(1).default(DEFAULT_EXTRACTION_REGEX),
  grader_output_format_instruction: z.string().default(DEFAULT_GRADER_OUTPUT_FORMAT_INSTRUCTION),
});
export type Rubric = z.output<typeof RubricSchema>;

const MessageSchema = z.object({ role: z.string().min(1), content: z.string() });
export const RubricDatapointSchema = z.strictObject({
  convo: z.array(MessageSchema).min(1),
  rubric_items: z.array(RubricSchema).min(1),
});
export type RubricDatapoint = z.output<typeof RubricDatapointSchema>;

const speaker = (role: string) => (role === 'user' || role === 'system' ? 'Human' : 'Chatbot');

/** The grader's one-message prompt: the context, the completion to grade (the last message), the rubric. */
export function graderPrompt(rubric: Rubric, convo: readonly Message[]): Message[] {
  const context = convo.slice(0, -1);
  const completion = convo[convo.length - 1];
  const lines = [
    'I will show you a conversation context, a chatbot completion to grade, and a rubric.',
    "Please grade the chatbot's completion based on the rubric.",
    '',
    '<context>',
    context.length ? context.map((m) => `${speaker(m.role)}: ${getTextContent(m)}`).join('\n\n') : '(No prior context)',
    '</context>',
    '',
    '<completion_to_grade>',
    `Chatbot: ${getTextContent(completion)}`,
    '</completion_to_grade>',
    '',
    '<rubric>',
    rubric.rubric_str,
    '</rubric>',
    '',
    `Please grade the chatbot's completion based on the rubric. ${rubric.grader_output_format_instruction}`,
  ];
  return [{ role: 'user', content: lines.join('\n') }];
}

/** `re.search(extraction_regex, response, re.DOTALL)` then `float()`; 0.0 when either fails. */
export function extractScore(rubric: Rubric, response: string): number {
  const m = new RegExp(rubric.extraction_regex, 's').exec(response);
  if (!m || m[1] === undefined) return 0.0;
  return pyFloat(m[1]) ?? 0.0;
}

export class RubricGradedEnv implements Env {
  constructor(
    readonly renderer: Renderer,
    readonly datapoint: RubricDatapoint,
    /** One grader per rubric item (each with its own seeds). */
    readonly graders: MessageCompleter[],
    readonly formatCoef = 0.1,
  ) {}

  async initialObservation(): Promise<InitialObservation> {
    return { ob: this.renderer.buildGenerationPrompt(this.datapoint.convo), stopCondition: this.renderer.getStopSequences() };
  }

  async step(action: Action): Promise<StepResult> {
    const parsed = this.renderer.parseResponse(action);
    const formatValid = parsed.termination === 'stop_sequence';
    const convo: Message[] = [...this.datapoint.convo, parsed.message];
    const verdicts = await Promise.all(
      this.datapoint.rubric_items.map(async (rubric, i) => {
        const text = getTextContent(await this.graders[i](graderPrompt(rubric, convo)));
        return { text, score: extractScore(rubric, text) };
      }),
    );
    const scores = verdicts.map((v) => v.score);
    const avg = scores.reduce((a, b) => a + b, 0) / scores.length;
    const format = formatValid ? 1.0 : 0.0;
    return {
      reward: this.formatCoef * (format - 1) + avg,
      episodeDone: true,
      nextObservation: this.renderer.buildGenerationPrompt(convo),
      nextStopCondition: this.renderer.getStopSequences(),
      metrics: { format, rubric_score: avg },
      logs: {
        format_valid: formatValid ? 1 : 0,
        termination: parsed.termination,
        num_rubrics: this.datapoint.rubric_items.length,
        response: getTextContent(parsed.message),
        ...Object.fromEntries(verdicts.map((v, i) => [`grader_${i}`, v.text])),
      },
    };
  }
}

export class RubricGradedEnvGroupBuilder extends BaseEnvGroupBuilder implements ContextualEnvGroupBuilder {
  private episodes = 0;
  constructor(
    readonly renderer: Renderer,
    readonly datapoint: RubricDatapoint,
    readonly grader: SideSamplerSpec,
    readonly groupSize: number,
    private readonly ctx: RolloutContext | null = null,
  ) {
    super();
  }

  withContext(ctx: RolloutContext): EnvGroupBuilder {
    return new RubricGradedEnvGroupBuilder(this.renderer, this.datapoint, this.grader, this.groupSize, ctx);
  }

  async makeEnvs(): Promise<Env[]> {
    const ctx = this.ctx;
    if (!ctx) throw new ConfigurationError('rubric: the grader needs a rollout context (the rollout activity binds one)');
    return Array.from({ length: this.groupSize }, () => {
      const episode = this.episodes++;
      return new RubricGradedEnv(this.renderer, this.datapoint, this.datapoint.rubric_items.map((_, i) => ctx.messageCompleter(this.grader, episode, i)));
    });
  }
}

export class RubricGradedDataset implements RLDataset {
  constructor(
    readonly renderer: Renderer,
    readonly batchSize: number,
    readonly groupSize: number,
    readonly datapoints: readonly RubricDatapoint[],
    readonly grader: SideSamplerSpec,
  ) {}
  get length(): number {
    return Math.floor(this.datapoints.length / this.batchSize);
  }
  getBatch(index: number): EnvGroupBuilder[] {
    return Array.from({ length: this.batchSize }, (_, i) => new RubricGradedEnvGroupBuilder(this.renderer, this.datapoints[index * this.batchSize + i], this.grader, this.groupSize));
  }
}

/** One datapoint per line; a bad line is refused naming the file and line. */
export function loadRubricDatapoints(file: string, shownAs: string): RubricDatapoint[] {
  return readJsonlRows(file, shownAs, RubricDatapointSchema, {
    noun: 'datapoints',
    check: (datapoint, line) => {
      for (const [j, r] of datapoint.rubric_items.entries()) {
        try {
          new RegExp(r.extraction_regex, 's');
        } catch (err) {
          throw new DataFormatError(`${shownAs}:${line}: rubric_items.${j}.extraction_regex: ${(err as Error).message}`);
        }
      }
    },
  });
}

export const RubricArgsSchema = z.strictObject({
  batch_size: z.int().positive(),
  train_group_size: z.int().positive(),
  test_group_size: z.int().positive().default(1),
  /** JSONL of {"convo": [...], "rubric_items": [...]}, relative to the repository root. */
  train_file: z.string().min(1),
  test_file: z.string().min(1).nullable().default(null),
  /** The grader's base model; null = the policy's own base weights. */
  grader_llm_name: z.string().min(1).nullable().default('Qwen/Qwen3.6-35B-A3B'),
  grader_renderer_name: z.string().min(1).nullable().default(null),
  grader_max_tokens: z.int().positive().default(2048),
});

export function buildRubricDatasets(args: Record<string, unknown>, renderer: Renderer, repoRoot: string): { train: RLDataset; test?: RLDataset } {
  const a = parseEnvArgs(RubricArgsSchema, args, 'rubric');
  const grader: SideSamplerSpec = { model: a.grader_llm_name, rendererName: a.grader_renderer_name, maxTokens: a.grader_max_tokens };
  const train = loadRubricDatapoints(path.resolve(repoRoot, a.train_file), a.train_file);
  if (a.batch_size > train.length) throw new ConfigurationError(`dataset.args.batch_size: ${a.batch_size} exceeds the ${train.length} datapoints of ${a.train_file}`);
  const test = a.test_file === null ? undefined : loadRubricDatapoints(path.resolve(repoRoot, a.test_file), a.test_file);
  return {
    train: new RubricGradedDataset(renderer, a.batch_size, a.train_group_size, train, grader),
    test: test && new RubricGradedDataset(renderer, test.length, a.test_group_size, test, grader),
  };
}
