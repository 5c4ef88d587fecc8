// `cookbook eval <model or checkpoint> <suite> [--limit N] [--data PATH] [--set key=value …]`:
// resolve and check the eval config and its data, start the eval workflow, print progress lines
// and the results table; results.json and results.md land in the eval run's folder.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import { EvalConfigSchema, type EvalConfig } from '../cookbook/eval/benchmark-config.js';
import { loadBenchmark } from '../cookbook/eval/benchmark-data.js';
import { AGENTIC_SUITES, EVAL_SUITE_NAMES, SUITES } from '../cookbook/eval/suites/index.js';
import { isAgenticSuite, loadTerminalEval, TERMINAL_CONFIG_DEFAULTS, terminalDataDir } from '../cookbook/eval/suites/terminal.js';
import { applyOverrides, ConfigError, parseConfig } from '../cookbook/config/overrides.js';
import type { RunRef } from '../cookbook/run-store.js';
import { DEFAULT_TASK_QUEUE } from '../workers/worker.js';
import { checkBackend } from './train.js';
import type { EvalWorkflowResult } from '../workflows/eval.js';
import type { Progress } from '../workflows/shared/messages.js';
import { followRun } from './follow.js';
import { KindKey, ModelKey, StatusKey, StepKey } from '../workflows/shared/search-attributes.js';

export const EVAL_USAGE = `  eval <model or checkpoint> <suite>    evaluate a base model or a tinker:// checkpoint on a benchmark
        [--limit N] [--data PATH]           (suites: ${EVAL_SUITE_NAMES.join(', ')}); --data: the full set in its
        [--set key=value …] [--detach]      public layout (default: the shipped sample); results.json in the run folder
        [--samples N] [--pass-at-k 1,5]     N samples per example, pass@k for each k ≤ N (default 1, 5, …, N)
  eval --list                         the benchmark suites`;

export interface ResolvedEval {
  workflowId: string;
  config: EvalConfig;
  run: RunRef;
}

export interface EvalArgs {
  limit?: string;
  data?: string;
  set?: string[];
  samples?: string;
  passAtK?: string;
}

function timestamp(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

const slug = (s: string) => s.replace(/^tinker:\/\//, '').replace(/[^A-Za-z0-9_.-]+/g, '_').replace(/^[_.-]+|[_.-]+$/g, '').slice(-40) || 'model';

/** The eval config from the command line: positionals, flags, then `--set` overrides (dotted keys). */
export function resolveEval(model: string, suite: string, args: EvalArgs, opts: { runsDir?: string; workflowId?: string } = {}): ResolvedEval {
  // The terminal suite's own defaults (the reference eval's), under any flag or --set.
  const raw: Record<string, unknown> = { ...(isAgenticSuite(suite) ? structuredClone(TERMINAL_CONFIG_DEFAULTS) : {}), model, suite };
  if (args.limit !== undefined) {
    if (!/^\d+$/.test(args.limit)) throw new ConfigError(`--limit: "${args.limit}" is not a positive integer`);
    raw.limit = Number(args.limit);
  }
  if (args.data !== undefined) raw.data_path = args.data;
  if (args.samples !== undefined) {
    if (!/^\d+$/.test(args.samples) || Number(args.samples) < 1) throw new ConfigError(`--samples: "${args.samples}" is not a positive integer`);
    raw.num_samples = Number(args.samples);
  }
  if (args.passAtK !== undefined) {
    const ks = args.passAtK.split(',').map((k) => k.trim());
    if (ks.some((k) => !/^\d+$/.test(k) || Number(k) < 1)) throw new ConfigError(`--pass-at-k: "${args.passAtK}" is not a comma-separated list of positive integers`);
    raw.pass_at_k = ks.map(Number);
  }
  const config = parseConfig(EvalConfigSchema, applyOverrides(raw, args.set ?? []), 'eval');
  for (const key of ['data_path', 'tokenizer_path'] as const) {
    const p = config[key];
    if (p === null) continue;
    if (key === 'data_path' && isAgenticSuite(config.suite)) {
      // A folder of task folders, or the name of a downloaded Harbor dataset.
      try {
        config.data_path = terminalDataDir(p, process.cwd());
      } catch (err) {
        throw new ConfigError(`--data: ${(err as Error).message}`);
      }
      continue;
    }
    config[key] = isAbsolute(p) ? p : resolve(p);
    if (existsSync(config[key]!)) continue;
    const hint = key === 'data_path' ? ' (a local folder or file in the dataset\'s layout; fetch one with `huggingface-cli download <id> --repo-type dataset --local-dir DIR`)' : '';
    throw new ConfigError(`${key === 'data_path' ? '--data' : key}: ${p} does not exist${hint}`);
  }
  // A local model folder is passed on as an absolute path, like `train`'s model_name.
  if (config.model.startsWith('./') || config.model.startsWith('../')) config.model = resolve(config.model);
  const workflowId = opts.workflowId ?? `eval-${config.run_name ?? `${config.suite}-${slug(config.model)}`}-${timestamp()}`;
  const logPath = resolve(config.log_path ?? resolve(opts.runsDir ?? 'runs', workflowId));
  config.log_path = logPath;
  if (existsSync(resolve(logPath, '.cookbook', 'run.json'))) throw new ConfigError(`log_path: ${logPath} already holds another run; choose another log_path or run_name`);
  return { workflowId, config, run: { workflowId, kind: 'eval', logPath } };
}

/** Loads the data as the workflow will, so a bad row fails here (naming file and line) before any run exists. */
export async function checkEvalData(r: ResolvedEval): Promise<number> {
  try {
    if (isAgenticSuite(r.config.suite)) return loadTerminalEval(r.config).tasks.length;
    return (await loadBenchmark(r.config)).items.length;
  } catch (err) {
    throw new ConfigError(`${r.config.suite} data: ${(err as Error).message}`);
  }
}

export function startEval(client: Client, r: ResolvedEval, taskQueue = DEFAULT_TASK_QUEUE) {
  return client.workflow.start('evalWorkflow', {
    taskQueue,
    workflowId: r.workflowId,
    args: [{ run: r.run, config: r.config }],
    memo: { config: r.config },
    staticSummary: `eval ${r.config.suite} · ${r.config.model}${r.config.limit ? ` · first ${r.config.limit}` : ''}`,
    typedSearchAttributes: [
      { key: KindKey, value: 'eval' },
      { key: ModelKey, value: r.config.model },
      { key: StepKey, value: 0 },
      { key: StatusKey, value: 'starting' },
    ],
    workflowIdConflictPolicy: 'FAIL',
  });
}

export function evalProgressLine(suite: string, p: Progress): string {
  if (p.status === 'starting') return `${suite}: starting (loading the data, resolving the model)`;
  const m = p.lastMetrics;
  const done = m.examples_done ?? 0;
  const correct = m.num_correct ?? 0;
  const [items, right, rate] = isAgenticSuite(suite) ? ['tasks', 'passed', 'pass rate'] : ['examples', 'correct', 'accuracy'];
  const acc = done > 0 ? ` · ${rate} so far ${(correct / done).toFixed(4)}` : '';
  return `${suite}: ${done}/${m.num_examples ?? '?'} ${items} (chunk ${p.step}/${p.totalSteps}) · ${correct} ${right}${acc} · ${p.status}`;
}

/** Polls the eval's progress until it ends, printing one plain line per change (and followRun's notes). */
export async function watchEval(client: Client, workflowId: string, suite: string, print: (line: string) => void = console.log, pollMs = 1000): Promise<EvalWorkflowResult> {
  let last = '';
  return followRun<EvalWorkflowResult>(client, client.workflow.getHandle(workflowId), {
    onProgress: (p) => {
      const line = evalProgressLine(suite, p);
      if (line !== last) print(line);
      last = line;
    },
    note: print,
    pollMs,
  });
}

export function formatSuites(): string {
  const w = Math.max(...EVAL_SUITE_NAMES.map((n) => n.length));
  return [
    ...Object.values(SUITES).map((s) => `${s.name.padEnd(w)}  ${s.description}\n${' '.repeat(w)}  data: ${s.dataset.hubId}${s.dataset.name ? ` (config ${s.dataset.name})` : ''}, split ${s.dataset.split}`),
    ...Object.values(AGENTIC_SUITES).map((s) => `${s.name.padEnd(w)}  ${s.description}\n${' '.repeat(w)}  data: ${s.data}`),
  ].join('\n');
}

export interface EvalCommandOptions extends EvalArgs {
  list?: boolean;
  detach?: boolean;
  workflowId?: string;
  engineUrl: string;
  taskQueue?: string;
  connect: () => Promise<Client>;
}

/** The `eval` command: 0 when the results are printed (or the run started with --detach). */
export async function evalCommand(rest: string[], o: EvalCommandOptions): Promise<number> {
  if (o.list) {
    console.log(formatSuites());
    return 0;
  }
  const [model, suite] = rest;
  if (!model || !suite) throw new ConfigError('eval: usage `cookbook eval <model or checkpoint> <suite> [--limit N] [--data PATH] [--set key=value …]` (suites: `cookbook eval --list`)');
  const resolved = resolveEval(model, suite, o, { workflowId: o.workflowId });
  const n = await checkEvalData(resolved);
  if (!resolved.config.model.startsWith('tinker://')) await checkBackend(resolved.config.base_url ?? o.engineUrl, resolved.config.model);
  const client = await o.connect();
  await startEval(client, resolved, o.taskQueue);
  console.log(`started ${resolved.workflowId}: ${resolved.config.suite} on ${resolved.config.model}, ${n} ${isAgenticSuite(resolved.config.suite) ? 'tasks' : 'examples'}`);
  console.log(`log dir  ${resolved.run.logPath}`);
  if (o.detach) return 0;
  const result = await watchEval(client, resolved.workflowId, resolved.config.suite);
  console.log(`\n${result.table}\n\nresults  ${result.resultsPath}`);
  return 0;
}
