// Activities of the eval workflow (`cookbook eval`): prepare (claim the run folder, load and check
// the suite's data, resolve a checkpoint's base model), one chunk of examples (sample + grade,
// results to a claim-check blob), finish (aggregate the blobs into results.json / results.md).
// A chunk whose blob is already written (an attempt that finished before its worker died) is
// read back instead of sampled again; its seeds would sample the same responses anyway.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { aggregateResults, benchmarkSeeds, sampleAndGrade } from '../cookbook/eval/benchmark-run.js';
import { evalJudge } from './eval-judge.js';
import { passAtKsOf } from '../cookbook/eval/pass-at-k.js';
import { loadBenchmark, suiteNamed, type BenchmarkData } from '../cookbook/eval/benchmark-data.js';
import type { EvalConfig } from '../cookbook/eval/benchmark-config.js';
import { chunkBlobPath, resultsTable, skippedMetrics, type ChunkBlob, type EvalResultsFile } from '../cookbook/eval/results.js';
import type { ExampleResult } from '../cookbook/eval/suites/index.js';
import { rendererForModel } from '../cookbook/renderers/for-model.js';
import { RunDirInUseError, RunStore, writeFileAtomic, type RunRef } from '../cookbook/run-store.js';
import { isAgenticSuite } from '../cookbook/eval/suites/terminal.js';
import { runStoreOnce } from '../cookbook/rl/side-effects.js';
import { callBackend, heartbeating, type ActivityDeps } from './context.js';
import { terminalEvalChunk, terminalEvalData, terminalEvalFinish } from './eval-terminal.js';
import { readRunConfig } from './training.js';
import { ErrorTypes } from './types.js';

/** The model to sample: a checkpoint's sampler path and its base model, or a base model alone. */
export interface EvalModel {
  baseModel: string;
  modelPath: string | null;
}

export interface EvalPlan extends EvalModel {
  numExamples: number;
  numChunks: number;
}

export interface EvalChunkInput extends EvalModel {
  run: RunRef;
  chunk: number;
}

export interface EvalChunkResult {
  /** The chunk's blob in the run store. */
  ref: string;
  examples: number;
  correct: number;
}

export interface EvalOutcome {
  metrics: Record<string, number>;
  resultsPath: string;
  table: string;
}

export interface EvalActivities {
  evalPrepare(input: { run: RunRef; config: EvalConfig }): Promise<EvalPlan>;
  evalChunk(input: EvalChunkInput): Promise<EvalChunkResult>;
  evalFinish(input: { run: RunRef; numChunks: number } & EvalModel): Promise<EvalOutcome>;
}

const isCheckpointPath = (model: string) => model.startsWith('tinker://');

/** The suite's examples per run folder, loaded once per worker. */
const dataCache = new Map<string, Promise<BenchmarkData>>();
function benchmarkData(run: RunRef, cfg: EvalConfig): Promise<BenchmarkData> {
  let data = dataCache.get(run.logPath);
  if (!data) {
    data = loadBenchmark(cfg).catch((err: unknown) => {
      dataCache.delete(run.logPath);
      throw ApplicationFailure.nonRetryable(err instanceof Error ? err.message : String(err), ErrorTypes.data);
    });
    dataCache.set(run.logPath, data);
  }
  return data;
}

/** A chunk's blob if a finished attempt wrote it whole; undefined otherwise (never written, or damaged). */
function finishedChunk(store: RunStore, chunk: number, expected: number, numSamples: number, suite: string): ChunkBlob | undefined {
  const ref = chunkBlobPath(chunk);
  if (!existsSync(join(store.logPath, '.cookbook', 'store', ref))) return undefined;
  try {
    const blob = JSON.parse(store.readBlob(ref).toString('utf8')) as ChunkBlob;
    const whole = blob.results.length === expected && blob.results.every((r) => (r.samples?.length ?? 1) === numSamples);
    return blob.format === 'eval_chunk/v1' && blob.suite === suite && blob.chunk === chunk && whole ? blob : undefined;
  } catch {
    return undefined;
  }
}

function readChunk(store: RunStore, chunk: number): ChunkBlob {
  return JSON.parse(store.readBlob(chunkBlobPath(chunk)).toString('utf8')) as ChunkBlob;
}

export function evalActivities(deps: ActivityDeps): EvalActivities {
  return {
    async evalPrepare({ run, config }) {
      try {
        new RunStore(run.logPath).init({ workflowId: run.workflowId, kind: run.kind, config }, new Set(['temperature']));
      } catch (err) {
        if (err instanceof RunDirInUseError) throw ApplicationFailure.nonRetryable(err.message, ErrorTypes.config);
        throw err;
      }
      const numExamples = isAgenticSuite(config.suite) ? (await terminalEvalData(config)).tasks.length : (await benchmarkData(run, config)).items.length;
      let baseModel = config.model;
      if (isCheckpointPath(config.model)) {
        const backend = deps.backendFor(config.base_url);
        baseModel = (await callBackend(`weights_info of ${config.model}`, 'bad-path', () => backend.weightsInfo(config.model))).base_model;
      }
      return { numExamples, numChunks: Math.ceil(numExamples / config.chunk_size), baseModel, modelPath: isCheckpointPath(config.model) ? config.model : null };
    },

    async evalChunk({ run, chunk, baseModel, modelPath }) {
      const cfg = readRunConfig<EvalConfig>(run);
      if (isAgenticSuite(cfg.suite)) return terminalEvalChunk(deps, { run, chunk, baseModel, modelPath }, cfg);
      const store = new RunStore(run.logPath);
      const { suite, items } = await heartbeating(benchmarkData(run, cfg));
      const start = chunk * cfg.chunk_size;
      const examples = items.slice(start, start + cfg.chunk_size).map((item, i) => ({ index: start + i, item }));
      if (examples.length === 0) throw ApplicationFailure.nonRetryable(`chunk ${chunk} is past the last example`, ErrorTypes.config);
      const summary = (results: ExampleResult[]) => ({ ref: chunkBlobPath(chunk), examples: results.length, correct: results.filter((r) => r.correct).length });

      const done = finishedChunk(store, chunk, examples.length, cfg.num_samples, suite.name);
      if (done) return summary(done.results);

      const { renderer } = await heartbeating(rendererForModel({ model_name: baseModel, renderer_name: cfg.renderer_name, tokenizer_path: cfg.tokenizer_path }));
      const backend = deps.backendFor(cfg.base_url);
      const sampler = await callBackend('create sampling session', 'bad-path', () => backend.createSamplingSession(modelPath ? { modelPath } : { baseModel }));
      const judgeFor = suite.judged ? await heartbeating(evalJudge(deps, cfg, { baseModel, modelPath })) : undefined;
      const results = await callBackend(`${suite.name} chunk ${chunk}`, 'session-lost', () =>
        heartbeating(sampleAndGrade(suite, examples, sampler, renderer, cfg, benchmarkSeeds(cfg.seed, suite.name), (index, sample) => runStoreOnce(store, ['eval', index, sample]), judgeFor), {
          chunk,
        }),
      );
      store.writeBlob(chunkBlobPath(chunk), JSON.stringify({ format: 'eval_chunk/v1', suite: suite.name, chunk, results } satisfies ChunkBlob));
      return summary(results);
    },

    async evalFinish({ run, numChunks, baseModel, modelPath }) {
      const cfg = readRunConfig<EvalConfig>(run);
      if (isAgenticSuite(cfg.suite)) return terminalEvalFinish({ run, numChunks, baseModel, modelPath }, cfg);
      const store = new RunStore(run.logPath);
      const suite = suiteNamed(cfg.suite);
      const examples = Array.from({ length: numChunks }, (_, i) => readChunk(store, i).results).flat();
      const { source, skipped } = await benchmarkData(run, cfg);
      const file: EvalResultsFile = {
        format: 'eval_results/v1',
        suite: suite.name,
        model: cfg.model,
        base_model: baseModel,
        data: source,
        sampling: { max_tokens: cfg.max_tokens, temperature: cfg.temperature, seed: cfg.seed, num_samples: cfg.num_samples },
        metrics: { ...aggregateResults(suite, examples, passAtKsOf(cfg)), ...skippedMetrics(skipped) },
        ...(skipped.length ? { skipped } : {}),
        examples,
      };
      const resultsPath = join(run.logPath, 'results.json');
      const table = resultsTable(file, skipped);
      writeFileAtomic(resultsPath, `${JSON.stringify(file, null, 2)}\n`);
      writeFileAtomic(join(run.logPath, 'results.md'), `${table}\n`);
      return { metrics: file.metrics, resultsPath, table };
    },
  };
}
