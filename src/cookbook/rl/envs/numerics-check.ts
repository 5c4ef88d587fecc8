// RL numerics check (reference 0.6.1 recipes/rl_numerics_check): a synthetic many-turn env whose
// point is the training loop's sampler-vs-trainer metrics (`optim/kl_sample_train_v1`/`_v2`, which
// every RL step logs) over many turns and long sequences. The policy reads a document one page per
// turn with `read_page` and answers how often a word appears; extra calls in one turn are rejected,
// so N pages take N turns. Reward: max(0, 1 − |predicted − true| / (tolerance · true)).
//
// Differences: documents are cut from a corpus file (by default data/rl_numerics_check/corpus.txt,
// this repository's docs as plain prose) instead of WikiText-103 from the Hub, and a batch's
// problems are drawn from Python's Random seeded with deriveSeed(seed, batch) rather than the
// string "<seed>-<batch>"; the draws themselves (choice, randint, randrange) are Python's.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ConfigurationError, DataFormatError } from '../../errors.js';
import { modelInputToInts } from '../../model-input.js';
import { PythonRandom, randbelow } from '../../python-random.js';
import { getTextContent } from '../../renderers/content.js';
import type { Message, Renderer, ToolSpec } from '../../renderers/types.js';
import { AgentToolMessageEnv, errorToolResult, simpleToolResult, tool, toolDeclaring, type RewardFn, type ToolCallRunner } from '../../tool-use/index.js';
import { EnvFromMessageEnv } from '../message-env.js';
import { deriveSeed } from '../seeds.js';
import { BaseEnvGroupBuilder, InitialObservationOverflow, type Action, type ActionExtra, type Env, type EnvGroupBuilder, type InitialObservation, type RLDataset, type StepResult } from '../types.js';
import { parseEnvArgs } from './args.js';

// Words that occur roughly 0.5-2.5 times per 1,000 words of English prose, no two sharing their
// first and last letters (so the "first_last" hint names one word).
export const DEFAULT_WORDS = [
  'after', 'against', 'although', 'before', 'being', 'between', 'both', 'could', 'during', 'however', 'including', 'into', 'known', 'later',
  'many', 'most', 'only', 'over', 'several', 'such', 'their', 'then', 'through', 'time', 'under', 'until', 'when', 'while',
] as const;

export const NUMERICS_SYSTEM_PROMPT = 'You are a careful assistant who reads documents with the read_page tool.';
export const NUMERICS_CORPUS_PATH = 'data/rl_numerics_check/corpus.txt';
/** Turns allowed beyond num_pages_max, for the answer and mistakes; pages exist up to max_turns. */
export const EXTRA_TURNS = 4;
export const DEFAULT_MAX_TRAJECTORY_TOKENS = 128 * 1024;
const FAILED_PARSE_REWARD = -0.1;
const CONTEXT_OVERFLOW_REWARD = -0.1;
const PROBLEM_SPAN_SLACK = 1.1;
const HIDDEN_NUM_PAGES_SEED = 0;
const EXAMPLE_WORD = 'light';
export const REJECTED_CALL_MESSAGE = 'Only one tool call per response is allowed; this call was not executed.';
const REJECTED_CALL_CONTENT = errorToolResult(REJECTED_CALL_MESSAGE).messages[0].content;
const MIN_TURNS_FOR_EXTENSION_WARNING = 5;

const PY_SPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;
const pyStrip = (s: string) => s.replace(new RegExp(`^${PY_SPACE.source}+|${PY_SPACE.source}+$`, 'g'), '');

/** Case-insensitive whole-word count, a word being a maximal run of ASCII letters. */
export function countWord(text: string, word: string): number {
  return (text.toLowerCase().match(/[a-z]+/g) ?? []).filter((w) => w === word).length;
}

/** The integer after the last "Answer:" (any case, optional bold), if any. */
export function parseAnswer(text: string): number | null {
  const matches = [...text.matchAll(/answer\s*:\s*\**\s*(-?\d[\d,]*)/gi)];
  if (!matches.length) return null;
  return Number.parseInt(matches[matches.length - 1][1].replace(/,/g, ''), 10);
}

export function closenessReward(predicted: number, trueCount: number, tolerance: number): number {
  const relativeError = Math.abs(predicted - trueCount) / Math.max(trueCount, 1);
  return Math.max(0, 1 - relativeError / tolerance);
}

/** Cut `numPages` consecutive pages of about `pageChars` characters, each ending at whitespace. */
export function splitPages(corpus: string, start: number, numPages: number, pageChars: number): string[] {
  const pages: string[] = [];
  let pos = start;
  for (let i = 0; i < numPages; i++) {
    let end = Math.min(pos + pageChars, corpus.length);
    while (end < corpus.length && !PY_SPACE.test(corpus[end])) end++;
    pages.push(pyStrip(corpus.slice(pos, end)));
    pos = end;
  }
  return pages;
}

export const CountingTaskSchema = z
  .strictObject({
    num_pages_hint: z.enum(['exact', 'range']).default('exact'),
    word_hint: z.enum(['exact', 'first_last', 'hidden']).default('exact'),
    num_pages_min: z.int().positive().default(28),
    num_pages_max: z.int().positive().default(36),
    page_chars: z.int().positive().default(10_000),
    words: z.array(z.string().regex(/^[a-z]+$/, 'target words must be lowercase ASCII letters')).min(1).default([...DEFAULT_WORDS]),
    secret_num_pages: z.int().positive().nullable().default(null),
    reward_tolerance: z.number().positive().default(0.2),
  })
  .superRefine((t, ctx) => {
    const fail = (message: string, p: string) => ctx.addIssue({ code: 'custom', message, path: [p] });
    if (t.num_pages_min > t.num_pages_max) fail('Need 1 <= num_pages_min <= num_pages_max', 'num_pages_min');
    if (new Set(t.words).size !== t.words.length) fail('words must not repeat', 'words');
    if (t.words.includes(EXAMPLE_WORD)) fail(`'${EXAMPLE_WORD}' is the prompt's matching example`, 'words');
    if (t.word_hint === 'first_last') {
      const byHint = new Map<string, string>();
      for (const w of t.words) {
        const other = byHint.get(w[0] + w.at(-1));
        if (other) fail(`'${other}' and '${w}' share first and last letters, so word_hint="first_last" would not identify the word`, 'words');
        byHint.set(w[0] + w.at(-1), w);
      }
    }
    if (t.word_hint === 'hidden' && t.words.length > 1) fail('word_hint="hidden" needs a single word, since nothing identifies it', 'words');
    if (t.secret_num_pages !== null && (t.secret_num_pages < t.num_pages_min || t.secret_num_pages > t.num_pages_max)) fail('secret_num_pages must lie in [num_pages_min, num_pages_max]', 'secret_num_pages');
  });
export type CountingTask = z.output<typeof CountingTaskSchema>;

export const maxTurnsOf = (task: CountingTask) => task.num_pages_max + EXTRA_TURNS;

const randint = (rng: PythonRandom, a: number, b: number) => a + randbelow(rng, b - a + 1);

/** The N of every problem under num_pages_hint="range": secret_num_pages, else Random(0).randint(min, max). */
export function hiddenNumPages(task: CountingTask): number {
  return task.secret_num_pages ?? randint(new PythonRandom(HIDDEN_NUM_PAGES_SEED), task.num_pages_min, task.num_pages_max);
}

export function buildCountingPrompt(task: CountingTask, word: string, numPages: number): string {
  const wordPhrase =
    task.word_hint === 'exact' ? `the word "${word}"` : task.word_hint === 'first_last' ? `a secret word that starts with "${word[0]}" and ends with "${word.at(-1)}"` : 'a secret word';
  const pagesPhrase =
    task.num_pages_hint === 'exact'
      ? `The document has ${numPages} pages, numbered 1 to ${numPages}. Count occurrences across all ${numPages} pages.`
      : `The document has between ${task.num_pages_min} and ${task.num_pages_max} pages, numbered from 1; the exact number is not given. Requests for pages past the end of the document still return text, but that text is not part of the document and must not be counted.`;
  return (
    `Your task is to count how many times ${wordPhrase} appears in a document.\n\n` +
    `${pagesPhrase}\n\n` +
    'Rules:\n' +
    '- Read pages with the read_page tool. Call read_page exactly once per response; additional calls in the same response are rejected.\n' +
    '- Matching is case-insensitive and counts whole words only. A word is a maximal run of letters: for the word "light", "Light", "light\'s" and "light-based" each count once, but "lights" and "lighthouse" do not count.\n' +
    '- When you have finished reading, reply without calling any tool and end your reply with "Answer: <count>", where <count> is a single integer.'
  );
}

export interface CountingProblem {
  word: string;
  numPages: number;
  /** Every readable page, pages past the end of the document included. */
  pages: string[];
  prompt: string;
  trueCount: number;
}

export function sampleProblem(rng: PythonRandom, corpus: string, task: CountingTask): CountingProblem {
  const word = task.words[randbelow(rng, task.words.length)];
  const numPages = task.num_pages_hint === 'exact' ? randint(rng, task.num_pages_min, task.num_pages_max) : hiddenNumPages(task);
  const numReadable = maxTurnsOf(task);
  const span = Math.trunc(numReadable * task.page_chars * PROBLEM_SPAN_SLACK);
  if (corpus.length <= span) throw new ConfigurationError(`rl_numerics_check: the corpus has ${corpus.length} characters but a problem needs about ${span}`);
  let start = randbelow(rng, corpus.length - span);
  const lineStart = corpus.indexOf('\n', start);
  if (lineStart >= 0 && lineStart < start + task.page_chars) start = lineStart + 1;
  const pages = splitPages(corpus, start, numReadable, task.page_chars);
  const trueCount = pages.slice(0, numPages).reduce((n, p) => n + countWord(p, word), 0);
  return { word, numPages, pages, prompt: buildCountingPrompt(task, word, numPages), trueCount };
}

interface EpisodeState {
  pagesRead: Set<number>;
  invalidPageRequests: number;
}

export function readPageTool(pages: readonly string[], state: EpisodeState) {
  return tool({
    name: 'read_page',
    description: 'Read one page of the document. Call this at most once per response.',
    parameters: z.object({ page: z.int().describe('Page number to read, starting from 1') }),
    run: ({ page }) => {
      if (page < 1 || page > pages.length) {
        state.invalidPageRequests += 1;
        return errorToolResult(`Page ${page} is not available.`, { name: 'read_page' });
      }
      state.pagesRead.add(page);
      return simpleToolResult(`[Page ${page}]\n${pages[page - 1]}`, { name: 'read_page' });
    },
  });
}

/** OneToolCallPerTurnEnv: the first call of a turn runs, the rest are answered with a rejection. */
export const oneToolCallPerTurn: ToolCallRunner = async (call, { index }, run) =>
  index === 0 ? run() : errorToolResult(REJECTED_CALL_MESSAGE, { callId: call.id ?? '', name: call.function.name, errorType: 'rejected' });

export function countingReward(problem: CountingProblem, state: EpisodeState, tolerance: number): RewardFn {
  return async (history: Message[]) => {
    const final = [...history].reverse().find((m) => m.role === 'assistant');
    const predicted = parseAnswer(final ? getTextContent(final) : '');
    const n = problem.numPages;
    const metrics: Record<string, number> = {
      answer_parsed: predicted !== null ? 1 : 0,
      true_count: problem.trueCount,
      num_pages: n,
      pages_read: state.pagesRead.size,
      read_all_pages: Array.from({ length: n }, (_, i) => i + 1).every((p) => state.pagesRead.has(p)) ? 1 : 0,
      read_past_end: [...state.pagesRead].some((p) => p > n) ? 1 : 0,
      rejected_tool_calls: history.filter((m) => m.role === 'tool' && m.content === REJECTED_CALL_CONTENT).length,
      invalid_page_requests: state.invalidPageRequests,
    };
    if (predicted === null) return [0, { ...metrics, exact_match: 0 }];
    return [closenessReward(predicted, problem.trueCount, tolerance), { ...metrics, exact_match: predicted === problem.trueCount ? 1 : 0, abs_error: Math.abs(predicted - problem.trueCount) }];
  };
}

let warnedNotExtending = false;

/**
 * Adds `extension_rate` at the end of an episode: how often a turn's next observation extended the
 * previous observation and action. Turns merge into one training sequence only when it does.
 */
export class ExtensionCheckedEnv extends EnvFromMessageEnv {
  private lastObservation: number[] = [];
  private turnsChecked = 0;
  private turnsExtended = 0;

  override async initialObservation(): Promise<InitialObservation | InitialObservationOverflow> {
    const result = await super.initialObservation();
    this.turnsChecked = this.turnsExtended = 0;
    if (!(result instanceof InitialObservationOverflow)) this.lastObservation = modelInputToInts(result.ob);
    return result;
  }

  override async step(action: Action, opts?: { extra?: ActionExtra }): Promise<StepResult> {
    const result = await super.step(action, opts);
    if (!result.episodeDone) {
      const next = modelInputToInts(result.nextObservation);
      const expected = [...this.lastObservation, ...action];
      this.turnsChecked += 1;
      if (expected.every((t, i) => next[i] === t)) this.turnsExtended += 1;
      this.lastObservation = next;
      return result;
    }
    if (!this.turnsChecked) return result;
    const rate = this.turnsExtended / this.turnsChecked;
    if (this.turnsChecked >= MIN_TURNS_FOR_EXTENSION_WARNING && rate < 0.5 && !warnedNotExtending) {
      warnedNotExtending = true;
      console.warn(
        '[cookbook] Most turns of an episode did not extend the previous observation and action, so those turns train as separate sequences with the full context so far. The renderer likely rewrites history, e.g. strips earlier reasoning.',
      );
    }
    return { ...result, metrics: { ...result.metrics, extension_rate: rate } };
  }
}

export function buildCountingEnv(problem: CountingProblem, renderer: Renderer, task: CountingTask, maxTrajectoryTokens: number | null, maxGenerationTokens: number | null): Env {
  const r = toolDeclaring(renderer, 'rl_numerics_check');
  const state: EpisodeState = { pagesRead: new Set(), invalidPageRequests: 0 };
  const readPage = readPageTool(problem.pages, state);
  const initialMessages = [...r.createConversationPrefixWithTools([readPage.toSpec()], NUMERICS_SYSTEM_PROMPT), { role: 'user' as const, content: problem.prompt }];
  const messageEnv = new AgentToolMessageEnv({
    tools: [readPage],
    initialMessages,
    maxTurns: maxTurnsOf(task),
    rewardFn: countingReward(problem, state, task.reward_tolerance),
    toolCallRunner: oneToolCallPerTurn,
  });
  return new ExtensionCheckedEnv(renderer, messageEnv, {
    failedParseReward: FAILED_PARSE_REWARD,
    maxTrajectoryTokens,
    maxGenerationTokens,
    contextOverflowReward: CONTEXT_OVERFLOW_REWARD,
  });
}

export interface CountingEnvOptions {
  task: CountingTask;
  groupSize: number;
  maxTrajectoryTokens: number | null;
  maxGenerationTokens: number | null;
}

export class CountingEnvGroupBuilder extends BaseEnvGroupBuilder {
  constructor(
    readonly problem: CountingProblem,
    readonly renderer: Renderer,
    readonly opts: CountingEnvOptions,
  ) {
    super();
  }
  async makeEnvs(): Promise<Env[]> {
    const { task, maxTrajectoryTokens, maxGenerationTokens } = this.opts;
    return Array.from({ length: this.opts.groupSize }, () => buildCountingEnv(this.problem, this.renderer, task, maxTrajectoryTokens, maxGenerationTokens));
  }
  override loggingTags(): string[] {
    return ['rl_numerics_check'];
  }
}

export class CountingDataset implements RLDataset {
  constructor(
    readonly corpus: string,
    readonly renderer: Renderer,
    readonly batchSize: number,
    readonly length: number,
    readonly seed: number,
    readonly opts: CountingEnvOptions,
  ) {}
  getBatch(index: number): EnvGroupBuilder[] {
    const rng = new PythonRandom(deriveSeed(this.seed, index));
    return Array.from({ length: this.batchSize }, () => new CountingEnvGroupBuilder(sampleProblem(rng, this.corpus, this.opts.task), this.renderer, this.opts));
  }
}

export const NumericsCheckArgsSchema = z.strictObject({
  batch_size: z.int().positive(),
  group_size: z.int().positive(),
  task: CountingTaskSchema.default(CountingTaskSchema.parse({})),
  n_batches: z.int().positive().default(1000),
  seed: z.int().default(0),
  max_trajectory_tokens: z.int().positive().nullable().default(DEFAULT_MAX_TRAJECTORY_TOKENS),
  /** The per-turn generation budget the trajectory limit reserves (the reference passes max_tokens). */
  max_generation_tokens: z.int().positive().nullable().default(null),
  /** Plain text the documents are cut from, relative to the repository root. */
  corpus_file: z.string().min(1).default(NUMERICS_CORPUS_PATH),
});

export function buildNumericsCheckDatasets(args: Record<string, unknown>, renderer: Renderer, repoRoot: string): { train: RLDataset } {
  const a = parseEnvArgs(NumericsCheckArgsSchema, args, 'rl_numerics_check');
  let corpus: string;
  try {
    corpus = readFileSync(path.resolve(repoRoot, a.corpus_file), 'utf8');
  } catch (err) {
    throw new DataFormatError(`${a.corpus_file}: cannot read (${(err as Error).message})`);
  }
  const opts: CountingEnvOptions = { task: a.task, groupSize: a.group_size, maxTrajectoryTokens: a.max_trajectory_tokens, maxGenerationTokens: a.max_generation_tokens };
  // The first batch is drawn now, so a corpus too short for the task is refused before any step runs.
  const dataset = new CountingDataset(corpus, renderer, a.batch_size, a.n_batches, a.seed, opts);
  dataset.getBatch(0);
  return { train: dataset };
}
