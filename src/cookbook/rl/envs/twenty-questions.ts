// Twenty questions (reference recipes/multiplayer_rl/twenty_questions): the policy asks yes/no
// questions and wins (1.0) with "Guess: <word>"; the answerer is a sampler — another base model or
// the policy's own base weights — that sees only its secret word and the last question. Its seeds
// come from the rollout context, per (episode, turn), so a recomputed episode hears the same answers.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ConfigurationError } from '../../errors.js';
import { getTextContent } from '../../renderers/content.js';
import type { Message, Renderer } from '../../renderers/types.js';
import type { MessageCompleter } from '../completers.js';
import type { ContextualEnvGroupBuilder, RolloutContext, SideSamplerSpec } from '../rollout-context.js';
import { BaseEnvGroupBuilder, type Action, type Env, type EnvGroupBuilder, type InitialObservation, type RLDataset, type StepResult } from '../types.js';
import { parseEnvArgs } from './args.js';
import { pyShuffled } from '../../python-random.js';

export const ANSWERER_SYSTEM_PROMPT = (answer: string) =>
  `You are the answerer in a game of 20 questions. You should only ever respond with 'yes' or 'no'. Your secret word is ${answer}. If the other player guesses it with Guess: <answer>, respond with 'yes' only if the answer is precisely your secret word.`;
export const PLAYER_SYSTEM_PROMPT =
  "You are the player in a game of 20 questions. You will ask a series of yes/no questions to the answerer. You will win if you can guess the answer in 20 questions or less. You will lose if you ask more than 20 questions. To guess the answer, write a line of the form 'Guess: <answer>' (without the angle brackets). The answer is always a single word -- don't use articles like 'a' or 'the'. Your questions should be one line, and less than 20 words.";
export const TWENTY_QUESTIONS_MAX_TURNS = 20;
export const TWENTY_QUESTIONS_WORDS_PATH = 'data/twenty_questions_nouns.txt';

interface Turn {
  role: 'player' | 'answerer';
  content: Message['content'];
}

/** 1.0 when the reply starts with "Guess: <word>" naming the secret word (case-insensitive). */
export function twentyQuestionsReward(content: string, answer: string): number {
  const m = /^Guess: ([^\n]*)/.exec(content);
  return m !== null && m[1].toLowerCase() === answer.toLowerCase() ? 1.0 : 0.0;
}

export class TwentyQuestionsEnv implements Env {
  private readonly turns: Turn[] = [];

  constructor(
    readonly answerer: MessageCompleter,
    readonly answer: string,
    readonly renderer: Renderer,
    readonly maxTurns = TWENTY_QUESTIONS_MAX_TURNS,
  ) {}

  private observation() {
    const convo: Message[] = [{ role: 'system', content: PLAYER_SYSTEM_PROMPT }, ...this.turns.map((t) => ({ role: t.role === 'player' ? 'assistant' : 'user', content: t.content }))];
    return this.renderer.buildGenerationPrompt(convo);
  }

  /** The answerer sees only the last question: each answer should stand on its own. */
  private convoForAnswerer(): Message[] {
    const last = this.turns[this.turns.length - 1];
    return [{ role: 'system', content: ANSWERER_SYSTEM_PROMPT(this.answer) }, { role: last.role === 'answerer' ? 'assistant' : 'user', content: last.content }];
  }

  async initialObservation(): Promise<InitialObservation> {
    return { ob: this.observation(), stopCondition: this.renderer.getStopSequences() };
  }

  async step(action: Action): Promise<StepResult> {
    const question = this.renderer.parseResponse(action).message;
    this.turns.push({ role: 'player', content: question.content });
    const reply = await this.answerer(this.convoForAnswerer());
    this.turns.push({ role: 'answerer', content: reply.content });
    const reward = twentyQuestionsReward(getTextContent(question), this.answer);
    const turn = Math.floor(this.turns.length / 2);
    const episodeDone = reward === 1 || turn >= this.maxTurns;
    return {
      reward,
      episodeDone,
      nextObservation: this.observation(),
      nextStopCondition: this.renderer.getStopSequences(),
      metrics: episodeDone ? { won: reward, turns: turn } : {},
      logs: { player: getTextContent(question), answerer: getTextContent(reply), ...(episodeDone ? { secret: this.answer } : {}) },
    };
  }
}

/** The envs of one secret word; each env's answerer is seeded by its episode index. */
export class TwentyQuestionsEnvGroupBuilder extends BaseEnvGroupBuilder implements ContextualEnvGroupBuilder {
  private episodes = 0;

  constructor(
    readonly answerer: SideSamplerSpec,
    readonly answer: string,
    readonly renderer: Renderer,
    readonly numEnvs: number,
    readonly maxTurns = TWENTY_QUESTIONS_MAX_TURNS,
    private readonly ctx: RolloutContext | null = null,
  ) {
    super();
  }

  withContext(ctx: RolloutContext): EnvGroupBuilder {
    return new TwentyQuestionsEnvGroupBuilder(this.answerer, this.answer, this.renderer, this.numEnvs, this.maxTurns, ctx);
  }

  async makeEnvs(): Promise<Env[]> {
    const ctx = this.ctx;
    if (!ctx) throw new ConfigurationError('twenty_questions: the answerer needs a rollout context (the rollout activity binds one)');
    return Array.from({ length: this.numEnvs }, () => new TwentyQuestionsEnv(ctx.messageCompleter(this.answerer, this.episodes++, 0), this.answer, this.renderer, this.maxTurns));
  }
}

export class TwentyQuestionsDataset implements RLDataset {
  constructor(
    readonly answerer: SideSamplerSpec,
    readonly answers: readonly string[],
    readonly renderer: Renderer,
    readonly batchSize: number,
    readonly groupSize: number,
    readonly maxTurns = TWENTY_QUESTIONS_MAX_TURNS,
  ) {}
  get length(): number {
    return Math.floor(this.answers.length / this.batchSize);
  }
  getBatch(index: number): EnvGroupBuilder[] {
    return Array.from({ length: this.batchSize }, (_, i) => new TwentyQuestionsEnvGroupBuilder(this.answerer, this.answers[index * this.batchSize + i], this.renderer, this.groupSize, this.maxTurns));
  }
}

/** The word list shuffled with random.Random(0); the last min(n // 5, 100) words are the test set. */
export function twentyQuestionsSplit(words: readonly string[], numEpochs: number): { train: string[]; test: string[] } {
  const shuffled = pyShuffled(words, 0);
  const numTest = Math.min(Math.floor(shuffled.length / 5), 100);
  const train = shuffled.slice(0, shuffled.length - numTest);
  return { train: Array.from({ length: numEpochs }, () => train).flat(), test: shuffled.slice(shuffled.length - numTest) };
}

export function loadWords(file: string): string[] {
  // Python's readlines + strip keeps blank lines as empty words; so do we.
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((l) => l.trim());
}

/** The reference picks the answerer's renderer from its name (Qwen3 without thinking). */
export function answererRendererName(model: string | null, explicit: string | null): string | null {
  if (explicit !== null || model === null) return explicit;
  return model.startsWith('Qwen/Qwen3') ? 'qwen3_disable_thinking' : null;
}

export const TwentyQuestionsArgsSchema = z.strictObject({
  batch_size: z.int().positive(),
  group_size: z.int().positive(),
  num_epochs: z.int().positive().default(1),
  test_group_size: z.int().positive().default(32),
  /** The answerer's base model; null = the policy's own base weights. */
  answerer_base_model: z.string().min(1).nullable().default('Qwen/Qwen3.5-9B'),
  answerer_renderer_name: z.string().min(1).nullable().default(null),
  answerer_max_tokens: z.int().positive().default(5),
  max_turns: z.int().positive().default(TWENTY_QUESTIONS_MAX_TURNS),
  /** A word per line; relative to the repository root. */
  words_file: z.string().min(1).default(TWENTY_QUESTIONS_WORDS_PATH),
});

export function buildTwentyQuestionsDatasets(args: Record<string, unknown>, renderer: Renderer, repoRoot: string): { train: RLDataset; test: RLDataset } {
  const a = parseEnvArgs(TwentyQuestionsArgsSchema, args, 'twenty_questions');
  const file = path.resolve(repoRoot, a.words_file);
  let words: string[];
  try {
    words = loadWords(file);
  } catch (err) {
    throw new ConfigurationError(`dataset.args.words_file: cannot read ${a.words_file} (${(err as Error).message})`);
  }
  const { train, test } = twentyQuestionsSplit(words, a.num_epochs);
  if (a.batch_size > train.length) throw new ConfigurationError(`dataset.args.batch_size: ${a.batch_size} exceeds the ${train.length} training words of ${a.words_file}`);
  const answerer: SideSamplerSpec = { model: a.answerer_base_model, rendererName: answererRendererName(a.answerer_base_model, a.answerer_renderer_name), maxTokens: a.answerer_max_tokens };
  return {
    train: new TwentyQuestionsDataset(answerer, train, renderer, a.batch_size, a.group_size, a.max_turns),
    test: new TwentyQuestionsDataset(answerer, test, renderer, test.length, a.test_group_size, a.max_turns),
  };
}
