// A benchmark suite as data plus a grader: where its public dataset lives (and the layout of the
// sample shipped under data/eval/), how a row becomes a prompt and a target, how a response is
// graded, and which metrics beyond accuracy it reports.
import type { Message } from '../../renderers/types.js';
import { actAlways, type Once } from '../../rl/side-effects.js';
import type { Judge } from '../judge.js';

/** One example, ready to sample: the prompt's messages and what grading needs (plain JSON). */
export interface EvalItem {
  /** Stable id (the reference's example_id). */
  id: string;
  messages: Message[];
  target: unknown;
  /** A breakdown key (MMLU's subject), for per-group accuracy. */
  group?: string;
}

export interface Grade {
  correct: boolean;
  /** What the grader read from the response ("" when nothing was found). */
  extracted: string;
  /** Per-example numbers the suite aggregates (e.g. IFEval's instruction counts). */
  metrics?: Record<string, number>;
}

/**
 * Thrown by a suite's parseRow for a well-formed row that this port or machine cannot check (an
 * IFBench instruction whose data cannot be obtained here). The loader leaves the row out of
 * sampling and scoring and reports it with `reason`; a malformed row stays a DataFormatError.
 */
export class UnsupportedRowError extends Error {
  override name = 'UnsupportedRowError';
  constructor(
    readonly id: string,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** A row left out as unsupported: its example id, where it was read (file:line) and why. */
export interface SkippedRow {
  id: string;
  at: string;
  reason: string;
}

/** One sampled response to an example and its grade. */
export interface SampleResult {
  response: string;
  extracted: string;
  correct: boolean;
  metrics?: Record<string, number>;
}

/**
 * A graded example as results.json stores it: the first sample's response and grade, and with
 * num_samples > 1 every sample (the first included) under `samples`, in sample-index order.
 */
export interface ExampleResult {
  index: number;
  id: string;
  group?: string;
  prompt: string;
  response: string;
  expected: string;
  extracted: string;
  correct: boolean;
  metrics?: Record<string, number>;
  samples?: SampleResult[];
}

/** What a grader may use beyond the response's text. */
export interface GradeContext {
  /** The parsed response, tool calls included (a tool-call benchmark grades those). */
  message: Message | null;
  /**
   * Sandbox runs and judge calls, once per key for this sample: recorded in the eval run's store,
   * so a retried chunk reads them back instead of running them again (DESIGN §3.9).
   */
  once: Once;
  /** A judged suite's judge for this sample (absent outside a run that configured one). */
  judge?: Judge;
}

/** Grading outside a run (tests, ad-hoc checks): effects act every time. */
export const NO_EFFECTS: GradeContext = { message: null, once: actAlways };

/**
 * The reference's ways of picking `limit` examples: `hf_shuffle`, limit_dataset's HF
 * `shuffle(seed)` before taking the first `limit` (the order changes even when nothing is cut);
 * `python_shuffle`, `random.Random(seed).shuffle` of all rows, only when `limit` cuts.
 */
export interface LimitPick {
  kind: 'hf_shuffle' | 'python_shuffle';
  seed: number;
}

export interface Suite {
  name: string;
  description: string;
  /**
   * The public dataset whose layout the loader reads: Hub id, config, split. With `configs`, one
   * config per subject (MMLU-Redux, C-Eval): each is loaded in turn and their rows concatenated
   * (`name` is then null); a config missing from the data is left out, as the reference does.
   */
  dataset: { hubId: string; name: string | null; split: string; configs?: readonly string[] };
  /** The shipped sample (relative to data/eval/). */
  sample: string;
  /** The reference's recommended_system_prompt: the system prompt when the eval sets none (null; "" is none). */
  recommendedSystemPrompt?: string;
  /** Grades with a model judge (GradeContext.judge): the eval config's `judge` applies to it alone. */
  judged?: boolean;
  /** How `limit` picks its examples; default: the first rows in file order. */
  limitPick?: LimitPick;
  /** Rows the reference evaluates (MMLU-Redux: only error_type "ok"); the others are dropped before `limit`. */
  include?(row: Record<string, unknown>): boolean;
  /**
   * A row of the dataset → an example; a row that cannot be used is a DataFormatError naming `at`,
   * a well-formed row this port cannot check an UnsupportedRowError (skipped and reported).
   * `config` is the config the row was read from (a multi-config suite's subject).
   */
  parseRow(row: Record<string, unknown>, at: string, systemPrompt: string | null, config?: string | null): EvalItem;
  /** A pure grader returns its grade; one that runs code or asks a judge awaits `ctx.once`. */
  grade(response: string, item: EvalItem, ctx?: GradeContext): Grade | Promise<Grade>;
  /** The expected answer as results show it. */
  expected(item: EvalItem): string;
  /** Metrics beyond score / num_correct / num_examples. */
  aggregate?(results: readonly ExampleResult[]): Record<string, number>;
}

/** The reference's build_messages: an optional system prompt, then the user's content. */
export function buildMessages(user: string, systemPrompt: string | null): Message[] {
  return [...(systemPrompt ? [{ role: 'system' as const, content: systemPrompt }] : []), { role: 'user', content: user }];
}
