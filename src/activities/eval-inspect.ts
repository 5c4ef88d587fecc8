// Activities of `cookbook eval --inspect`: prepare (claim the run folder, resolve a checkpoint's base
// model) and run (serve the model's OpenAI API in this worker, let Inspect AI's own runner evaluate
// the task against it with a JSON log under <run>/inspect-logs, then write results.json and
// results.md from that log). A retried run (its worker killed) finds the unfinished log and hands
// it to Inspect's eval_retry, which runs only the samples the log lacks: a finished sample is never
// generated or scored twice.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { InspectEvalConfig, InspectResultsFile, InspectSampleResult } from '../cookbook/eval/inspect-config.js';
import { RunDirInUseError, RunStore, writeFileAtomic, type RunRef } from '../cookbook/run-store.js';
import { REPO_ROOT } from '../stack/engine-env.mjs';
import { ensureInspectEnv } from '../stack/inspect-env.mjs';
import { callBackend, heartbeating, type ActivityDeps } from './context.js';
import { readRunConfig } from './run-config.js';
import { ErrorTypes } from './types.js';

export interface InspectPlan {
  baseModel: string;
}

export interface InspectOutcome {
  metrics: Record<string, number>;
  resultsPath: string;
  inspectLog: string;
  table: string;
  numSamples: number;
}

export interface EvalInspectActivities {
  evalInspectPrepare(input: { run: RunRef; config: InspectEvalConfig }): Promise<InspectPlan>;
  evalInspectRun(input: { run: RunRef; baseModel: string }): Promise<InspectOutcome>;
}

const DRIVER = join(REPO_ROOT, 'src', 'cookbook', 'eval', 'inspect_driver.py');
export const inspectLogDir = (run: RunRef) => join(run.logPath, 'inspect-logs');

/** The parts of an Inspect JSON log results.json is made of. */
export interface InspectLog {
  status: string;
  eval: { task: string; model: string };
  results?: { scores: Array<{ name: string; metrics: Record<string, { name: string; value: number }> }> };
  samples?: Array<{ id: string | number; epoch: number; uuid?: string; output?: { completion?: string }; scores?: Record<string, { value: unknown; answer?: string | null }> }>;
}

export const readInspectLog = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as InspectLog;

/** The run's Inspect logs, oldest first (Inspect names them by their start time). */
export function inspectLogs(run: RunRef): string[] {
  const dir = inspectLogDir(run);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => join(dir, f));
}

function runDriver(python: string, spec: object, env: NodeJS.ProcessEnv, logFile: string): Promise<{ log: string; status: string; error: string | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [DRIVER, JSON.stringify(spec)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    // A cancelled activity (the workflow cancelled, or the heartbeat lost) ends Inspect with it.
    Context.current().cancelled.catch(() => child.kill('SIGKILL'));
    child.on('error', reject);
    child.on('close', (code) => {
      writeFileAtomic(logFile, `${err}${out}`);
      const last = out.trim().split('\n').pop() ?? '';
      if (code === 0 && last.startsWith('{')) resolve(JSON.parse(last));
      else reject(new Error(`Inspect exited with ${code}: ${err.trim().split('\n').slice(-15).join('\n')}`));
    });
  });
}

/** results.json's content from a finished Inspect log. */
export function inspectResults(cfg: InspectEvalConfig, baseModel: string, logFile: string, log: InspectLog): InspectResultsFile {
  const metrics: Record<string, number> = {};
  for (const score of log.results?.scores ?? []) for (const m of Object.values(score.metrics)) metrics[`${score.name}/${m.name}`] = m.value;
  const samples: InspectSampleResult[] = (log.samples ?? []).map((s) => ({
    id: s.id,
    epoch: s.epoch,
    scores: Object.fromEntries(Object.entries(s.scores ?? {}).map(([k, v]) => [k, v.value])),
    answer: Object.values(s.scores ?? {})[0]?.answer ?? null,
    completion: s.output?.completion ?? '',
  }));
  samples.sort((a, b) => String(a.id).localeCompare(String(b.id)) || a.epoch - b.epoch);
  metrics.num_samples = samples.length;
  return {
    format: 'inspect_results/v1',
    task: cfg.task,
    model: cfg.model,
    base_model: baseModel,
    inspect_log: logFile,
    sampling: { max_tokens: cfg.max_tokens, temperature: cfg.temperature, seed: cfg.seed },
    metrics,
    samples,
  };
}

export function inspectTable(file: InspectResultsFile): string {
  const rows = Object.entries(file.metrics).map(([k, v]) => `| ${k} | ${Number.isInteger(v) ? v : v.toFixed(4)} |`);
  return [`Inspect task ${file.task} · model ${file.model}`, '', '| metric | value |', '|---|---:|', ...rows].join('\n');
}

export function evalInspectActivities(deps: ActivityDeps): EvalInspectActivities {
  return {
    async evalInspectPrepare({ run, config }) {
      try {
        new RunStore(run.logPath).init({ workflowId: run.workflowId, kind: run.kind, config }, new Set(['temperature']));
      } catch (err) {
        if (err instanceof RunDirInUseError) throw ApplicationFailure.nonRetryable(err.message, ErrorTypes.config);
        throw err;
      }
      if (!config.model.startsWith('tinker://')) return { baseModel: config.model };
      const backend = deps.backendFor(config.base_url);
      return { baseModel: (await callBackend(`weights_info of ${config.model}`, 'bad-path', () => backend.weightsInfo(config.model))).base_model };
    },

    async evalInspectRun({ run, baseModel }) {
      const cfg = readRunConfig<InspectEvalConfig>(run);
      const logDir = inspectLogDir(run);
      mkdirSync(logDir, { recursive: true });
      const { python } = await heartbeating(ensureInspectEnv({ log: () => {} }));
      let finished = inspectLogs(run).find((f) => readInspectLog(f).status === 'success');
      if (!finished) {
        const [{ openServedModel }, { startServer }] = await Promise.all([import('../serve/served-model.js'), import('../serve/server.js')]);
        const backendUrl = (deps.backendFor(cfg.base_url) as unknown as { baseUrl: string }).baseUrl;
        const model = await heartbeating(openServedModel({ source: cfg.model, baseUrl: backendUrl, rendererName: cfg.renderer_name ?? undefined, tokenizerPath: cfg.tokenizer_path ?? undefined }));
        const apiKey = `sk-inspect-${run.workflowId}`;
        const server = await startServer({ model, apiKey, defaultMaxTokens: cfg.max_tokens });
        try {
          // An earlier attempt's unfinished log: Inspect resumes it, keeping its finished samples.
          const unfinished = inspectLogs(run).at(-1);
          const spec = unfinished
            ? { retry: unfinished, log_dir: logDir }
            : { task: cfg.task, model: cfg.model, task_args: cfg.task_args, limit: cfg.limit, max_tokens: cfg.max_tokens, temperature: cfg.temperature, seed: cfg.seed, log_dir: logDir };
          const env = { ...process.env, COOKBOOK_BASE_URL: server.url, COOKBOOK_API_KEY: apiKey, PYTHONUNBUFFERED: '1' };
          const attempt = Context.current().info.attempt;
          const out = await heartbeating(runDriver(python, spec, env, join(run.logPath, `inspect-attempt-${attempt}.log`)), { inspect: unfinished ? `retry of ${unfinished}` : cfg.task }).catch((err: Error) => {
            // Inspect failing before its log exists could not load the task (a wrong name, a file
            // that does not import): no retry fixes that. Later failures are retried from the log.
            if (inspectLogs(run).length === 0) throw ApplicationFailure.nonRetryable(`Inspect task ${cfg.task}: ${err.message}`, ErrorTypes.config);
            throw err;
          });
          if (out.status !== 'success') throw new Error(`Inspect ended with status ${out.status}: ${out.error ?? 'no error given'} (log ${out.log})`);
          finished = out.log.replace(/^file:\/\//, '');
        } finally {
          await server.close();
          await model.close();
        }
      }
      const file = inspectResults(cfg, baseModel, finished, readInspectLog(finished));
      const resultsPath = join(run.logPath, 'results.json');
      const table = inspectTable(file);
      writeFileAtomic(resultsPath, `${JSON.stringify(file, null, 2)}\n`);
      writeFileAtomic(join(run.logPath, 'results.md'), `${table}\n`);
      return { metrics: file.metrics, resultsPath, inspectLog: finished, table, numSamples: file.samples.length };
    },
  };
}
