// `cookbook tts <model or checkpoint> [--data PATH] [--limit N] [--set key=value …]`: resolve and
// check the TTS config and its problems, start the TTS workflow, print progress lines and the
// summary table; tts_summary.json, tts_per_problem.jsonl and tts_steps.jsonl land in the run folder.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import { applyOverrides, ConfigError, parseConfig } from '../cookbook/config/overrides.js';
import type { RunRef } from '../cookbook/run-store.js';
import { TtsConfigSchema, type TtsConfig } from '../cookbook/tts/config.js';
import { loadTtsProblems } from '../cookbook/tts/problems.js';
import { DEFAULT_TASK_QUEUE } from '../workers/worker.js';
import type { Progress } from '../workflows/shared/messages.js';
import { KindKey, ModelKey, StatusKey, StepKey } from '../workflows/shared/search-attributes.js';
import type { TtsWorkflowResult } from '../workflows/tts.js';
import { followRun } from './follow.js';
import { checkBackend } from './train.js';
import { checkLogPathFree, checkRunStore, runLogPath } from '../cookbook/stores/run-location.js';

export const TTS_USAGE = `  tts <model or checkpoint>           True-Thinking Score of each step of the model's chains of thought
        [--limit N] [--data PATH]           (docs/tts.md); --data: a JSONL file of the dataset's rows (default: the
        [--set key=value …] [--detach]      shipped problems; --set dataset=math|gsm8k for MATH-500 / GSM8K rows)`;

export interface ResolvedTts {
  workflowId: string;
  config: TtsConfig;
  run: RunRef;
}

export interface TtsArgs {
  limit?: string;
  data?: string;
  set?: string[];
}

function timestamp(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

const slug = (s: string) => s.replace(/^tinker:\/\//, '').replace(/[^A-Za-z0-9_.-]+/g, '_').replace(/^[_.-]+|[_.-]+$/g, '').slice(-40) || 'model';

/** The TTS config from the command line: the model, flags, then `--set` overrides (dotted keys). */
export function resolveTts(model: string, args: TtsArgs, opts: { runsDir?: string; workflowId?: string } = {}): ResolvedTts {
  const raw: Record<string, unknown> = { model };
  if (args.limit !== undefined) {
    if (!/^\d+$/.test(args.limit) || Number(args.limit) < 1) throw new ConfigError(`--limit: "${args.limit}" is not a positive integer`);
    raw.limit = Number(args.limit);
  }
  if (args.data !== undefined) raw.data_path = args.data;
  const config = parseConfig(TtsConfigSchema, applyOverrides(raw, args.set ?? []), 'tts');
  for (const key of ['data_path', 'tokenizer_path'] as const) {
    const p = config[key];
    if (p === null) continue;
    config[key] = isAbsolute(p) ? p : resolve(p);
    if (!existsSync(config[key]!)) throw new ConfigError(`${key === 'data_path' ? '--data' : key}: ${p} does not exist`);
  }
  // A local model folder is passed on as an absolute path, like `train`'s model_name.
  if (config.model.startsWith('./') || config.model.startsWith('../')) config.model = resolve(config.model);
  const workflowId = opts.workflowId ?? `tts-${config.run_name ?? `${config.dataset}-${slug(config.model)}`}-${timestamp()}`;
  const logPath = runLogPath(config.log_path, opts.runsDir, workflowId);
  config.log_path = logPath;
  checkLogPathFree(logPath);
  return { workflowId, config, run: { workflowId, kind: 'tts', logPath } };
}

/** Loads the problems as the workflow will, so a bad row fails here (naming file and line) before any run exists. */
export async function checkTtsData(r: ResolvedTts): Promise<number> {
  await checkRunStore(r.run.logPath);
  try {
    return (await loadTtsProblems(r.config)).problems.length;
  } catch (err) {
    throw new ConfigError(`tts data (${r.config.dataset}): ${(err as Error).message}`);
  }
}

export function startTts(client: Client, r: ResolvedTts, taskQueue = DEFAULT_TASK_QUEUE) {
  return client.workflow.start('ttsWorkflow', {
    taskQueue,
    workflowId: r.workflowId,
    args: [{ run: r.run, config: r.config }],
    memo: { config: r.config },
    staticSummary: `tts ${r.config.dataset} · ${r.config.model}${r.config.limit ? ` · first ${r.config.limit}` : ''}`,
    typedSearchAttributes: [
      { key: KindKey, value: 'tts' },
      { key: ModelKey, value: r.config.model },
      { key: StepKey, value: 0 },
      { key: StatusKey, value: 'starting' },
    ],
    workflowIdConflictPolicy: 'FAIL',
  });
}

export function ttsProgressLine(p: Progress): string {
  if (p.status === 'starting') return 'tts: starting (loading the problems, resolving the model)';
  const m = p.lastMetrics;
  return `tts: ${m.problems_done ?? 0}/${m.num_problems ?? '?'} problems (chunk ${p.step}/${p.totalSteps}) · ${m.steps_scored ?? 0} steps scored · ${p.status}`;
}

/** Polls the run's progress until it ends, printing one plain line per change (and followRun's notes). */
export async function watchTts(client: Client, workflowId: string, print: (line: string) => void = console.log, pollMs = 1000): Promise<TtsWorkflowResult> {
  let last = '';
  return followRun<TtsWorkflowResult>(client, client.workflow.getHandle(workflowId), {
    onProgress: (p) => {
      const line = ttsProgressLine(p);
      if (line !== last) print(line);
      last = line;
    },
    note: print,
    pollMs,
  });
}

export interface TtsCommandOptions extends TtsArgs {
  detach?: boolean;
  workflowId?: string;
  engineUrl: string;
  taskQueue?: string;
  connect: () => Promise<Client>;
}

/** The `tts` command: 0 when the summary is printed (or the run started with --detach). */
export async function ttsCommand(rest: string[], o: TtsCommandOptions): Promise<number> {
  const [model] = rest;
  if (!model) throw new ConfigError('tts: usage `cookbook tts <model or checkpoint> [--limit N] [--data PATH] [--set key=value …]`');
  const resolved = resolveTts(model, o, { workflowId: o.workflowId });
  const n = await checkTtsData(resolved);
  if (!resolved.config.model.startsWith('tinker://')) await checkBackend(resolved.config.base_url ?? o.engineUrl, resolved.config.model);
  const client = await o.connect();
  await startTts(client, resolved, o.taskQueue);
  console.log(`started ${resolved.workflowId}: TTS of ${resolved.config.model} on ${n} problems (dataset ${resolved.config.dataset})`);
  console.log(`log dir  ${resolved.run.logPath}`);
  if (o.detach) return 0;
  const result = await watchTts(client, resolved.workflowId);
  console.log(`\n${result.table}\n\nsummary  ${result.summaryPath}\nreport   npx cookbook report ${resolved.run.logPath}`);
  return 0;
}
