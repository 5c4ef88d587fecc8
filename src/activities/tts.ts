// Activities of the TTS workflow (`cookbook tts`): prepare (claim the run folder, load and check
// the problems, resolve a checkpoint's base model), one chunk of problems (sample each CoT, score
// every step; the chunk's records to a claim-check blob), finish (the reference's files from the
// blobs: tts_per_problem.jsonl, tts_summary.json, plus every step's scores in tts_steps.jsonl).
// A chunk whose blob is already written (an attempt that finished before its worker died) is read
// back instead of scored again; its seeds would sample the same CoTs anyway.
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { rendererForModel } from '../cookbook/renderers/for-model.js';
import { RunDirInUseError, RunStore, writeFileAtomic, type RunRef } from '../cookbook/run-store.js';
import { aggregate, type TtsAggregate } from '../cookbook/tts/analysis.js';
import type { TtsConfig } from '../cookbook/tts/config.js';
import { scoreProblem, type ProblemRecord } from '../cookbook/tts/problem.js';
import { loadTtsProblems, type TtsProblem } from '../cookbook/tts/problems.js';
import { summaryTable, TTS_FILES, ttsChunkBlobPath, type TtsChunkBlob } from '../cookbook/tts/results.js';
import { callBackend, heartbeating, type ActivityDeps } from './context.js';
import { readRunConfig } from './run-config.js';
import { ErrorTypes } from './types.js';

export interface TtsModel {
  baseModel: string;
  modelPath: string | null;
}

export interface TtsPlan extends TtsModel {
  numProblems: number;
  numChunks: number;
}

export interface TtsChunkInput extends TtsModel {
  run: RunRef;
  chunk: number;
}

export interface TtsChunkResult {
  /** The chunk's blob in the run store. */
  ref: string;
  problems: number;
  steps: number;
  correct: number;
}

export interface TtsOutcome {
  summary: TtsAggregate;
  summaryPath: string;
  table: string;
}

export interface TtsActivities {
  ttsPrepare(input: { run: RunRef; config: TtsConfig }): Promise<TtsPlan>;
  ttsChunk(input: TtsChunkInput): Promise<TtsChunkResult>;
  ttsFinish(input: { run: RunRef; numChunks: number } & TtsModel): Promise<TtsOutcome>;
}

const isCheckpointPath = (model: string) => model.startsWith('tinker://');

/** The problems per run folder, loaded once per worker. */
const problemsCache = new Map<string, Promise<{ problems: TtsProblem[]; source: string }>>();
function problemsOf(run: RunRef, cfg: TtsConfig) {
  let p = problemsCache.get(run.logPath);
  if (!p) {
    p = loadTtsProblems(cfg).catch((err: unknown) => {
      problemsCache.delete(run.logPath);
      throw ApplicationFailure.nonRetryable(err instanceof Error ? err.message : String(err), ErrorTypes.data);
    });
    problemsCache.set(run.logPath, p);
  }
  return p;
}

/** A chunk's blob if a finished attempt wrote it whole; undefined otherwise (never written, or damaged). */
function finishedChunk(store: RunStore, chunk: number, start: number, expected: number): TtsChunkBlob | undefined {
  const ref = ttsChunkBlobPath(chunk);
  if (!store.hasBlob(ref)) return undefined;
  try {
    const blob = JSON.parse(store.readBlob(ref).toString('utf8')) as TtsChunkBlob;
    const whole = blob.records.length === expected && blob.records.every((r, i) => r.problem_idx === start + i);
    return blob.format === 'tts_chunk/v1' && blob.chunk === chunk && whole ? blob : undefined;
  } catch {
    return undefined;
  }
}

const readChunk = (store: RunStore, chunk: number) => JSON.parse(store.readBlob(ttsChunkBlobPath(chunk)).toString('utf8')) as TtsChunkBlob;

const chunkSummary = (chunk: number, records: readonly ProblemRecord[]): TtsChunkResult => ({
  ref: ttsChunkBlobPath(chunk),
  problems: records.length,
  steps: records.reduce((n, r) => n + r.steps.length, 0),
  correct: records.filter((r) => 'model_correct' in r.outcome && r.outcome.model_correct).length,
});

const jsonl = (rows: readonly unknown[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join('');

export function ttsActivities(deps: ActivityDeps): TtsActivities {
  return {
    async ttsPrepare({ run, config }) {
      try {
        new RunStore(run.logPath).init({ workflowId: run.workflowId, kind: run.kind, config }, new Set(['temperature']));
      } catch (err) {
        if (err instanceof RunDirInUseError) throw ApplicationFailure.nonRetryable(err.message, ErrorTypes.config);
        throw err;
      }
      const { problems } = await problemsOf(run, config);
      let baseModel = config.model;
      if (isCheckpointPath(config.model)) {
        const backend = deps.backendFor(config.base_url);
        baseModel = (await callBackend(`weights_info of ${config.model}`, 'bad-path', () => backend.weightsInfo(config.model))).base_model;
      }
      return { numProblems: problems.length, numChunks: Math.ceil(problems.length / config.chunk_size), baseModel, modelPath: isCheckpointPath(config.model) ? config.model : null };
    },

    async ttsChunk({ run, chunk, baseModel, modelPath }) {
      const cfg = readRunConfig<TtsConfig>(run);
      const store = new RunStore(run.logPath);
      const { problems } = await heartbeating(problemsOf(run, cfg));
      const start = chunk * cfg.chunk_size;
      const mine = problems.slice(start, start + cfg.chunk_size);
      if (mine.length === 0) throw ApplicationFailure.nonRetryable(`chunk ${chunk} is past the last problem`, ErrorTypes.config);

      const done = finishedChunk(store, chunk, start, mine.length);
      if (done) return chunkSummary(chunk, done.records);

      const { renderer, tokenizer } = await heartbeating(rendererForModel({ model_name: baseModel, renderer_name: cfg.renderer_name, tokenizer_path: cfg.tokenizer_path }));
      const backend = deps.backendFor(cfg.base_url);
      const sampler = await callBackend('create sampling session', 'bad-path', () => backend.createSamplingSession(modelPath ? { modelPath } : { baseModel }));
      const scoring = { sampler, renderer, tokenizer, max_tokens: cfg.max_tokens, temperature: cfg.temperature, seed: cfg.seed };
      const records = await callBackend(`tts chunk ${chunk}`, 'session-lost', () =>
        heartbeating(Promise.all(mine.map((p, i) => scoreProblem(p, start + i, scoring))), { chunk }),
      );
      store.writeBlob(ttsChunkBlobPath(chunk), JSON.stringify({ format: 'tts_chunk/v1', chunk, records } satisfies TtsChunkBlob));
      return chunkSummary(chunk, records);
    },

    async ttsFinish({ run, numChunks, baseModel }) {
      const cfg = readRunConfig<TtsConfig>(run);
      const store = new RunStore(run.logPath);
      const records = Array.from({ length: numChunks }, (_, i) => readChunk(store, i).records).flat();
      const outcomes = records.map((r) => r.outcome);
      const summary = aggregate(outcomes, cfg.model, cfg.dataset, records.length);
      const { source } = await problemsOf(run, cfg);
      const steps = records.flatMap((r) => r.steps.map((s) => ({ problem_idx: r.problem_idx, ...s })));
      const cots = records.map(({ problem_idx, question, answer, response, cot }) => ({ problem_idx, question, answer, response, cot }));
      writeFileAtomic(join(run.logPath, TTS_FILES.perProblem), jsonl(outcomes));
      writeFileAtomic(join(run.logPath, TTS_FILES.steps), jsonl(steps));
      writeFileAtomic(join(run.logPath, TTS_FILES.cots), jsonl(cots));
      const summaryPath = join(run.logPath, TTS_FILES.summary);
      writeFileAtomic(summaryPath, `${JSON.stringify({ ...summary, base_model: baseModel, data: source }, null, 2)}\n`);
      const table = summaryTable(summary);
      writeFileAtomic(join(run.logPath, TTS_FILES.table), `${table}\n`);
      return { summary, summaryPath, table };
    },
  };
}
