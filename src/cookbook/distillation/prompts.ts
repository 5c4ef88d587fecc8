// Prompt-only datasets for distillation (spec §5.1 `PromptOnlyEnv`, `PromptOnlyDataset`,
// `CompositeDataset`): a JSONL file of prompts becomes groups of envs whose only purpose is to let
// the student sample a response; the reward is always 0 and the learning signal is the teacher KL.

import path from 'node:path';
import { z } from 'zod';
import { DataFormatError } from '../errors.js';
import { parseJsonlRows, readTextFile } from '../jsonl.js';
import { modelInputFromInts } from '../model-input.js';
import type { Message, Renderer } from '../renderers/types.js';
import { ProblemGroupBuilder } from '../rl/problem-env.js';
import { rlRepoRoot } from '../rl/datasets.js';
import type { Env, EnvGroupBuilder, InitialObservation, RLDataset, StepResult, StopCondition } from '../rl/types.js';
import { validateConversation } from '../supervised/jsonl.js';
import type { Tokenizer } from '../tokenizer.js';

export const DISTILL_PROMPTS_PATH = 'data/distill_prompts.jsonl';

export const PromptDatasetConfigSchema = z.strictObject({
  /** JSONL of prompts; defaults to the shipped sample. Relative paths resolve against the base dir. */
  file_path: z.string().min(1).optional(),
  /** Logging tag of the dataset's groups (default: the file's base name). */
  name: z.string().min(1).optional(),
  group_size: z.int().positive().default(4),
  max_prompt_tokens: z.int().positive().default(1024),
});
export type PromptDatasetConfig = z.output<typeof PromptDatasetConfigSchema>;

export interface PromptRow {
  /** The conversation to continue: every message before the first assistant message. */
  messages: Message[];
  /** 1-based line in the source file, for error messages. */
  line: number;
}

/**
 * One prompt per line: `{"messages": [...]}` (a chat; the prompt is everything before the first
 * assistant message, so a full SFT conversation file works too) or the reference's question rows
 * `{"question": "..."}` (deepmath's field), which become a single user message.
 */
export function parsePromptsJsonl(text: string, displayPath: string): PromptRow[] {
  return parseJsonlRows(text, displayPath, parsePromptRow, {
    emptyMessage: `${displayPath}: no prompts (the file is empty)`,
    trimLines: false,
  });
}

function parsePromptRow(data: unknown, at: string, line: number): PromptRow {
  const obj = data as Record<string, unknown> | null;
  if (obj && typeof obj === 'object' && !Array.isArray(obj) && !('messages' in obj) && 'question' in obj) {
    if (typeof obj.question !== 'string' || obj.question === '') throw new DataFormatError(`${at}: "question" must be a non-empty string`);
    return { messages: [{ role: 'user', content: obj.question }], line };
  }
  const messages = validateConversation(data, at);
  const firstAssistant = messages.findIndex((m) => m.role === 'assistant');
  const prompt = firstAssistant === -1 ? messages : messages.slice(0, firstAssistant);
  if (prompt.length === 0 || prompt[prompt.length - 1].role !== 'user') {
    throw new DataFormatError(`${at}: the prompt (messages before the first assistant message) must end with a user message`);
  }
  return { messages: prompt, line };
}

export async function loadPromptsJsonl(absPath: string, displayPath = absPath): Promise<PromptRow[]> {
  return parsePromptsJsonl(await readTextFile(absPath, displayPath), displayPath);
}

/** The absolute path of a prompt dataset's file and the path to show in errors. */
export function resolvePromptFile(cfg: PromptDatasetConfig, baseDir?: string): { absPath: string; displayPath: string } {
  if (cfg.file_path === undefined) return { absPath: path.join(rlRepoRoot(), DISTILL_PROMPTS_PATH), displayPath: DISTILL_PROMPTS_PATH };
  return { absPath: path.resolve(baseDir ?? process.cwd(), cfg.file_path), displayPath: cfg.file_path };
}

/**
 * Truncates the last user message to `maxTokens` tokens by an encode/slice/decode round trip, as
 * the reference's `max_prompt_tokens` does. Structured (list) content is left as is.
 */
export function truncatePrompt(messages: Message[], tokenizer: Tokenizer, maxTokens: number): Message[] {
  const last = messages[messages.length - 1];
  if (typeof last.content !== 'string') return messages;
  const ids = tokenizer.encode(last.content, { addSpecialTokens: false });
  if (ids.length <= maxTokens) return messages;
  return [...messages.slice(0, -1), { ...last, content: tokenizer.decode(ids.slice(0, maxTokens)) }];
}

/** The reference's PromptOnlyEnv: shows the prompt, ends after one reply with reward 0. */
export class PromptOnlyEnv implements Env {
  constructor(
    readonly messages: Message[],
    readonly renderer: Renderer,
  ) {}

  get stopCondition(): StopCondition {
    return this.renderer.getStopSequences();
  }

  async initialObservation(): Promise<InitialObservation> {
    return { ob: this.renderer.buildGenerationPrompt(this.messages), stopCondition: this.stopCondition };
  }

  async step(): Promise<StepResult> {
    return { reward: 0.0, episodeDone: true, nextObservation: modelInputFromInts([]), nextStopCondition: this.stopCondition, metrics: {} };
  }
}

/** `len = ceil(n / groupsPerBatch)`; each prompt is one group of `groupSize` envs, in file order. */
export class PromptOnlyDataset implements RLDataset {
  constructor(
    readonly prompts: readonly Message[][],
    readonly renderer: Renderer,
    readonly groupsPerBatch: number,
    readonly groupSize: number,
    readonly datasetName: string,
  ) {
    if (!Number.isInteger(groupsPerBatch) || groupsPerBatch <= 0) throw new RangeError('groupsPerBatch must be a positive integer');
  }

  get length(): number {
    return Math.ceil(this.prompts.length / this.groupsPerBatch);
  }

  getBatch(index: number): EnvGroupBuilder[] {
    const start = index * this.groupsPerBatch;
    const end = Math.min(start + this.groupsPerBatch, this.prompts.length);
    if (!Number.isInteger(index) || index < 0 || start >= end) throw new RangeError(`batch index ${index} out of range [0, ${this.length})`);
    return this.prompts.slice(start, end).map((p) => new ProblemGroupBuilder(() => new PromptOnlyEnv(p, this.renderer), this.groupSize, this.datasetName));
  }
}

/**
 * The reference's CompositeDataset: `len = min(len(d))`; batch i concatenates every dataset's
 * batch i and records each builder's dataset index (which routes its datums to that dataset's teacher).
 */
export class CompositeDataset {
  constructor(readonly datasets: readonly RLDataset[]) {
    if (datasets.length === 0) throw new RangeError('CompositeDataset needs at least one dataset');
  }

  get length(): number {
    return Math.min(...this.datasets.map((d) => d.length));
  }

  getBatch(index: number): { builders: EnvGroupBuilder[]; datasetIndices: number[] } {
    const builders: EnvGroupBuilder[] = [];
    const datasetIndices: number[] = [];
    this.datasets.forEach((d, idx) => {
      for (const b of d.getBatch(index)) {
        builders.push(b);
        datasetIndices.push(idx);
      }
    });
    return { builders, datasetIndices };
  }
}
