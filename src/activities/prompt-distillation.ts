// Activities of the prompt distillation data stage: a plan (how many chunks), one activity per
// chunk of queries that samples the teacher behind the classification prompt and writes the
// parsed answers as a chunk file in the run store (whole, or not at all), and a merge of the chunks,
// in order, into the conversations file. A chunk already in the store is read back, never sampled
// again, so a retried or re-run stage reproduces exactly what an uninterrupted one writes.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { PromptDistillConfig } from '../cookbook/config/prompt-distill.js';
import { readQueries } from '../cookbook/distillation/prompt-distillation-queries.js';
import {
  chunkCount,
  chunkFileName,
  chunkRange,
  extractAnswer,
  studentConversationLine,
  teacherConversation,
  teacherQuerySeed,
} from '../cookbook/distillation/prompt-distillation.js';
import { DataFormatError } from '../cookbook/errors.js';
import { rendererForModel } from '../cookbook/renderers/for-model.js';
import { RunStore, writeFileAtomic, type RunRef } from '../cookbook/run-store.js';
import { callBackend, heartbeating, rolloutFailure, type ActivityDeps } from './context.js';
import { readRunConfig } from './training.js';
import { ErrorTypes } from './types.js';

export interface PromptDistillPlan {
  nChunks: number;
  nQueries: number;
}
export interface PromptDistillChunkResult {
  chunk: number;
  /** Queries whose reply had a parsable answer (the others are dropped, as the reference does). */
  conversations: number;
  /** True when an earlier attempt or run had already written the chunk. */
  reused: boolean;
}
export interface PromptDistillMergeResult {
  outputPath: string;
  conversations: number;
}

const countLines = (text: string) => text.split('\n').filter((l) => l.trim() !== '').length;
const storedPath = (run: RunRef, rel: string) => join(run.logPath, '.cookbook', 'store', rel);

export function promptDistillationActivities(deps: ActivityDeps) {
  const dataError = (err: unknown) => ApplicationFailure.nonRetryable((err as Error).message, ErrorTypes.data);
  const planOf = (cfg: PromptDistillConfig) => {
    try {
      return readQueries(cfg);
    } catch (err) {
      throw err instanceof DataFormatError ? dataError(err) : err;
    }
  };

  return {
    async promptDistillPlan({ run }: { run: RunRef }): Promise<PromptDistillPlan> {
      const cfg = readRunConfig<PromptDistillConfig>(run);
      const queries = planOf(cfg);
      return { nChunks: chunkCount(queries.length, cfg.queries_per_chunk), nQueries: queries.length };
    },

    /** The teacher's answers to one chunk of queries; a chunk already in the store is not sampled again. */
    async promptDistillChunk({ run, chunk }: { run: RunRef; chunk: number }): Promise<PromptDistillChunkResult> {
      const rel = chunkFileName(chunk);
      if (existsSync(storedPath(run, rel))) return { chunk, conversations: countLines(readFileSync(storedPath(run, rel), 'utf8')), reused: true };
      const cfg = readRunConfig<PromptDistillConfig>(run);
      const queries = planOf(cfg);
      let range: { start: number; end: number };
      try {
        range = chunkRange(queries.length, cfg.queries_per_chunk, chunk);
      } catch (err) {
        throw dataError(err);
      }
      const { renderer, tokenizer } = await rendererForModel(cfg, cfg.renderer_name);
      const source = cfg.load_checkpoint_path ? { modelPath: cfg.load_checkpoint_path } : { baseModel: cfg.model_name };
      const session = await callBackend('create teacher sampler', 'bad-path', () => deps.backendFor(cfg.base_url, cfg.wire).createSamplingSession(source));
      const stop = renderer.getStopSequences();
      const lines: string[] = [];
      try {
        // All queries of the chunk at once, each with its own seed: the order of completion cannot matter.
        const replies = await heartbeating(
          Promise.all(
            queries.slice(range.start, range.end).map(async (query, k) => {
              const prompt = renderer.buildGenerationPrompt(teacherConversation(query));
              const seed = teacherQuerySeed(cfg.seed, range.start + k);
              const out = await session.sample(prompt, 1, { max_tokens: cfg.max_tokens, temperature: cfg.temperature, stop, seed });
              const seq = out.sequences[0];
              if (!seq) throw new Error('the teacher sampler returned no sequences');
              return { query, answer: extractAnswer(tokenizer.decode(seq.tokens), cfg.answer_pattern) };
            }),
          ),
          { chunk },
        );
        for (const { query, answer } of replies) if (answer !== null) lines.push(studentConversationLine(query, answer));
      } catch (err) {
        throw rolloutFailure(err, `prompt distillation chunk ${chunk}`);
      }
      // Written whole (temp file + rename): a chunk in the store is always complete.
      new RunStore(run.logPath).writeBlob(rel, lines.map((l) => l + '\n').join(''));
      return { chunk, conversations: lines.length, reused: false };
    },

    /** Concatenates the chunks, in order, into `<log_path>/<output_name>`. */
    async promptDistillMerge({ run, nChunks }: { run: RunRef; nChunks: number }): Promise<PromptDistillMergeResult> {
      const cfg = readRunConfig<PromptDistillConfig>(run);
      const store = new RunStore(run.logPath);
      const parts: string[] = [];
      for (let chunk = 0; chunk < nChunks; chunk++) {
        const rel = chunkFileName(chunk);
        if (!existsSync(storedPath(run, rel))) throw ApplicationFailure.nonRetryable(`chunk ${chunk} was never written`, ErrorTypes.data);
        parts.push(store.readBlob(rel).toString('utf8'));
      }
      const text = parts.join('');
      const outputPath = join(run.logPath, cfg.output_name);
      writeFileAtomic(outputPath, text);
      return { outputPath, conversations: countLines(text) };
    },
  };
}

export type PromptDistillationActivities = ReturnType<typeof promptDistillationActivities>;
