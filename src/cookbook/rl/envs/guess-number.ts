// Guess the number (reference recipes/multiplayer_rl/guess_number): the player guesses an integer
// in [0, 1024) and is told "Too low", "Too high" or "Correct" each turn; 1.0 for the right guess,
// −1.0 for a reply that does not parse, up to 10 turns. The logs of each turn are the transcript.
import { z } from 'zod';
import type { Renderer } from '../../renderers/types.js';
import { getTextContent } from '../../renderers/content.js';
import type { Message } from '../../renderers/types.js';
import { BaseEnvGroupBuilder, type Action, type Env, type EnvGroupBuilder, type InitialObservation, type RLDataset, type StepResult } from '../types.js';
import { ConfigurationError } from '../../errors.js';
import { parseEnvArgs, pyInt } from './args.js';
import { pySample } from '../../python-random.js';

export const GUESS_NUMBER_UPPER_BOUND = 1024;
export const GUESS_NUMBER_SYSTEM_PROMPT = `Your job is to guess a integer between 0 and ${GUESS_NUMBER_UPPER_BOUND}. You can output your guess with the format Guess: <guess> (without the angle brackets), and say nothing else. Then we will tell you whether you guess is too high, too low, or correct.`;
export const GUESS_NUMBER_FAIL_TO_PARSE = 'Failed to parse. Please output in the format Guess: <guess> (without the angle brackets), and say nothing else.';
const FORMAT_PENALTY = -1.0;
export const GUESS_NUMBER_MAX_TURNS = 10;

/** The feedback and reward for one reply (`re.match(r"Guess: (.*)")` then `int()`). */
export function guessFeedback(reply: string, gold: number): { text: string; reward: number } {
  const m = /^Guess: ([^\n]*)/.exec(reply);
  const guess = m ? pyInt(m[1]) : null;
  if (guess === null) return { text: GUESS_NUMBER_FAIL_TO_PARSE, reward: FORMAT_PENALTY };
  if (guess === gold) return { text: 'Correct', reward: 1.0 };
  return guess < gold ? { text: 'Too low', reward: 0.0 } : { text: 'Too high', reward: 0.0 };
}

export class GuessNumberEnv implements Env {
  private readonly turns: Message[] = [];

  constructor(
    readonly goldAnswer: number,
    readonly renderer: Renderer,
    readonly maxTurns = GUESS_NUMBER_MAX_TURNS,
  ) {}

  private observation() {
    return this.renderer.buildGenerationPrompt([{ role: 'system', content: GUESS_NUMBER_SYSTEM_PROMPT }, ...this.turns]);
  }

  async initialObservation(): Promise<InitialObservation> {
    return { ob: this.observation(), stopCondition: this.renderer.getStopSequences() };
  }

  /** Seam for rollout hooks' on_turn_begin: injected messages join the transcript, not the turn count. */
  async injectMessages(messages: Message[]): Promise<InitialObservation> {
    this.turns.push(...messages);
    return this.initialObservation();
  }

  async step(action: Action): Promise<StepResult> {
    const reply = getTextContent(this.renderer.parseResponse(action).message);
    const feedback = guessFeedback(reply, this.goldAnswer);
    // The reference records the player's turns under the role "player", and so do we.
    this.turns.push({ role: 'player', content: reply }, { role: 'user', content: feedback.text });
    const episodeDone = feedback.reward === 1 || this.turns.filter((m) => m.role === 'player').length >= this.maxTurns;
    return {
      reward: feedback.reward,
      episodeDone,
      nextObservation: this.observation(),
      nextStopCondition: this.renderer.getStopSequences(),
      logs: { guess: reply, feedback: feedback.text, target: this.goldAnswer },
    };
  }
}

export class GuessNumberEnvGroupBuilder extends BaseEnvGroupBuilder {
  constructor(
    readonly answer: number,
    readonly renderer: Renderer,
    readonly numEnvs: number,
    readonly maxTurns = GUESS_NUMBER_MAX_TURNS,
  ) {
    super();
  }
  async makeEnvs(): Promise<Env[]> {
    return Array.from({ length: this.numEnvs }, () => new GuessNumberEnv(this.answer, this.renderer, this.maxTurns));
  }
}

export class GuessNumberDataset implements RLDataset {
  constructor(
    readonly answers: readonly number[],
    readonly renderer: Renderer,
    readonly batchSize: number,
    readonly groupSize: number,
    readonly maxTurns = GUESS_NUMBER_MAX_TURNS,
  ) {}
  get length(): number {
    return Math.floor(this.answers.length / this.batchSize);
  }
  getBatch(index: number): EnvGroupBuilder[] {
    return Array.from({ length: this.batchSize }, (_, i) => new GuessNumberEnvGroupBuilder(this.answers[index * this.batchSize + i], this.renderer, this.groupSize, this.maxTurns));
  }
}

/** `random.Random(0).sample(range(1024), 1024)`, split at int(1024 · train_fraction). */
export function guessNumberSplit(trainFraction: number): { train: number[]; test: number[] } {
  const all = Array.from({ length: GUESS_NUMBER_UPPER_BOUND }, (_, i) => i);
  const shuffled = pySample(all, GUESS_NUMBER_UPPER_BOUND, 0);
  const nTrain = Math.floor(GUESS_NUMBER_UPPER_BOUND * trainFraction);
  return { train: shuffled.slice(0, nTrain), test: shuffled.slice(nTrain) };
}

export const GuessNumberArgsSchema = z.strictObject({
  batch_size: z.int().positive(),
  train_group_size: z.int().positive(),
  train_fraction: z.number().gt(0).lt(1).default(0.9),
  test_group_size: z.int().positive().default(4),
  /** Turns per episode (the reference's MAX_TURNS = 10). */
  max_turns: z.int().positive().default(GUESS_NUMBER_MAX_TURNS),
});

export function buildGuessNumberDatasets(args: Record<string, unknown>, renderer: Renderer): { train: RLDataset; test: RLDataset } {
  const a = parseEnvArgs(GuessNumberArgsSchema, args, 'guess_number');
  const { train, test } = guessNumberSplit(a.train_fraction);
  if (a.batch_size > train.length) throw new ConfigurationError(`dataset.args.batch_size: ${a.batch_size} exceeds the ${train.length} training numbers`);
  return {
    train: new GuessNumberDataset(train, renderer, a.batch_size, a.train_group_size, a.max_turns),
    test: new GuessNumberDataset(test, renderer, test.length, a.test_group_size, a.max_turns),
  };
}
