// The eval workflow's activities for the agentic `terminal` suite (cookbook/eval/suites/terminal*.ts):
// a chunk runs one episode per task and writes its results to a claim-check blob (the trajectories
// stay in the run folder, never in a Temporal payload); the finish writes results.json,
// results.md (the metrics and the reference's asummary.txt table) and asummary.txt / aerr.txt.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { EvalConfig } from '../cookbook/eval/benchmark-config.js';
import { chunkBlobPath, resultsTable } from '../cookbook/eval/results.js';
import { loadTerminalEval, TerminalEvalSchema, type TerminalEvalData } from '../cookbook/eval/suites/terminal.js';
import { evaluateTerminalTask, type TerminalEpisodeSetup } from '../cookbook/eval/suites/terminal-run.js';
import { isTau2Task, TAU2_BENCH_SUITE, TAU2_USER_SIMULATOR } from '../cookbook/eval/suites/tau2-data.js';
import { evaluateTau2Task } from '../cookbook/eval/suites/tau2-run.js';
import { JudgeConfigSchema } from '../cookbook/eval/judge.js';
import { evalJudge } from './eval-judge.js';
import { aggregateSweBench, skippedTasks, sweBenchTable, SWE_BENCH_SUITE } from '../cookbook/eval/suites/swe-bench.js';
import { aggregateTerminal, errorsText, summaryText, terminalTable, type TerminalChunkBlob, type TerminalResultsFile, type TerminalTaskResult } from '../cookbook/eval/suites/terminal-results.js';
import { rendererForModel } from '../cookbook/renderers/for-model.js';
import { runStoreOnce } from '../cookbook/rl/side-effects.js';
import { RunStore, writeFileAtomic, type RunRef } from '../cookbook/run-store.js';
import { clearStaleEpisodeRoots } from '../cookbook/sandbox/episode.js';
import { toolDeclaring } from '../cookbook/tool-use/index.js';
import { callBackend, heartbeating, type ActivityDeps } from './context.js';
import type { EvalChunkInput, EvalChunkResult, EvalModel, EvalOutcome } from './eval.js';
import { ErrorTypes } from './types.js';

/** The config's tasks; a folder that cannot be read fails the eval (there is nothing to retry). */
export async function terminalEvalData(cfg: EvalConfig): Promise<TerminalEvalData> {
  try {
    return await loadTerminalEval({ ...cfg, terminal: terminalOptions(cfg) });
  } catch (err) {
    throw ApplicationFailure.nonRetryable(err instanceof Error ? err.message : String(err), ErrorTypes.data);
  }
}

const terminalOptions = (cfg: EvalConfig) => cfg.terminal ?? TerminalEvalSchema.parse({});

/** A task's name as a file name in the run folder. */
const fileName = (task: string) => task.replace(/[^A-Za-z0-9_.-]+/g, '_');

/** The chunk's blob when a finished attempt wrote it whole. */
function finishedChunk(store: RunStore, suite: string, chunk: number, expected: number): TerminalChunkBlob | undefined {
  const ref = chunkBlobPath(chunk);
  if (!existsSync(join(store.logPath, '.cookbook', 'store', ref))) return undefined;
  try {
    const blob = JSON.parse(store.readBlob(ref).toString('utf8')) as TerminalChunkBlob;
    return blob.format === 'eval_chunk/v1' && blob.suite === suite && blob.chunk === chunk && blob.results.length === expected ? blob : undefined;
  } catch {
    return undefined;
  }
}

const summary = (chunk: number, results: TerminalTaskResult[]): EvalChunkResult => ({ ref: chunkBlobPath(chunk), examples: results.length, correct: results.filter((r) => r.correct).length });

export async function terminalEvalChunk(deps: ActivityDeps, { run, chunk, baseModel, modelPath }: EvalChunkInput, cfg: EvalConfig): Promise<EvalChunkResult> {
  const store = new RunStore(run.logPath);
  const { tasks } = await terminalEvalData(cfg);
  const start = chunk * cfg.chunk_size;
  const examples = tasks.slice(start, start + cfg.chunk_size).map((task, i) => ({ index: start + i, task }));
  if (examples.length === 0) throw ApplicationFailure.nonRetryable(`chunk ${chunk} is past the last task`, ErrorTypes.config);
  const done = finishedChunk(store, cfg.suite, chunk, examples.length);
  if (done) return summary(chunk, done.results);

  const policyModel = { model_name: baseModel, renderer_name: cfg.renderer_name, tokenizer_path: cfg.tokenizer_path };
  const { renderer, tokenizer } = await heartbeating(rendererForModel(policyModel));
  let declaring;
  try {
    declaring = toolDeclaring(renderer, cfg.suite);
  } catch (err) {
    throw ApplicationFailure.nonRetryable(`${(err as Error).message} (set renderer_name to one that declares tools)`, ErrorTypes.config);
  }
  const backend = deps.backendFor(cfg.base_url);
  const openSession = (source: { modelPath: string } | { baseModel: string }) => callBackend('create sampling session', 'bad-path', () => backend.createSamplingSession(source));
  const session = await openSession(modelPath ? { modelPath } : { baseModel });
  // tau2_bench's customer: the eval's judge, else the evaluated model sampling as the reference's simulator.
  const userFor =
    cfg.suite === TAU2_BENCH_SUITE.name ? await heartbeating(evalJudge(deps, { ...cfg, judge: cfg.judge ?? JudgeConfigSchema.parse(TAU2_USER_SIMULATOR) }, { baseModel, modelPath })) : null;
  clearStaleEpisodeRoots();
  const setup: TerminalEpisodeSetup = {
    session,
    openSession,
    policyModel,
    renderer: declaring,
    tokenizer,
    sampling: cfg,
    terminal: terminalOptions(cfg),
    systemPrompt: cfg.system_prompt,
    suite: cfg.suite,
    // The eval's position of the episode: a retried chunk replays its sandbox operations.
    onceFor: (index) => runStoreOnce(store, ['eval', chunk, index]),
    writeTrajectory: (task, text) => {
      const rel = join('trajectories', `${fileName(task)}.txt`);
      writeFileAtomic(join(run.logPath, rel), text);
      return rel;
    },
  };
  const results = await callBackend(`terminal chunk ${chunk}`, 'session-lost', () =>
    heartbeating(Promise.all(examples.map(({ index, task }) => (isTau2Task(task) ? evaluateTau2Task(index, task, { ...setup, userFor: (i) => userFor!(i, 0) }) : evaluateTerminalTask(index, task, setup)))), { chunk }),
  );
  store.writeBlob(chunkBlobPath(chunk), JSON.stringify({ format: 'eval_chunk/v1', suite: cfg.suite, chunk, results } satisfies TerminalChunkBlob));
  return summary(chunk, results);
}

export async function terminalEvalFinish({ run, numChunks, baseModel }: { run: RunRef; numChunks: number } & EvalModel, cfg: EvalConfig): Promise<EvalOutcome> {
  const store = new RunStore(run.logPath);
  const results = Array.from({ length: numChunks }, (_, i) => (JSON.parse(store.readBlob(chunkBlobPath(i)).toString('utf8')) as TerminalChunkBlob).results).flat();
  const file: TerminalResultsFile = {
    format: 'eval_results/v1',
    suite: cfg.suite,
    model: cfg.model,
    base_model: baseModel,
    data: (await terminalEvalData(cfg)).source,
    sampling: { max_tokens: cfg.max_tokens, temperature: cfg.temperature, seed: cfg.seed, num_samples: cfg.num_samples },
    terminal: terminalOptions(cfg),
    metrics: cfg.suite === SWE_BENCH_SUITE.name ? aggregateSweBench(results) : aggregateTerminal(results),
    ...(cfg.suite === SWE_BENCH_SUITE.name ? { skipped: skippedTasks(results) } : {}),
    examples: results,
  };
  const resultsPath = join(run.logPath, 'results.json');
  const table = `${resultsTable(file)}\n\n${cfg.suite === SWE_BENCH_SUITE.name ? sweBenchTable(results) : terminalTable(file.suite, results)}`;
  writeFileAtomic(resultsPath, `${JSON.stringify(file, null, 2)}\n`);
  writeFileAtomic(join(run.logPath, 'results.md'), `${table}\n`);
  writeFileAtomic(join(run.logPath, 'asummary.txt'), summaryText(results));
  const errors = errorsText(results);
  if (errors) writeFileAtomic(join(run.logPath, 'aerr.txt'), errors);
  return { metrics: file.metrics, resultsPath, table };
}
