// `cookbook eval <model or checkpoint> --inspect <task> [--limit N] [--set key=value …]`: an Inspect AI
// task (a registered name such as inspect_evals/gsm8k, or path/to/task.py@task_name) run durably
// against the model; results.json, results.md and Inspect's own logs land in the run folder.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import { applyOverrides, ConfigError, parseConfig } from '../cookbook/config/overrides.js';
import { InspectEvalConfigSchema, type InspectEvalConfig } from '../cookbook/eval/inspect-config.js';
import type { RunRef } from '../cookbook/run-store.js';
import { DEFAULT_TASK_QUEUE } from '../workers/task-queue.js';
import type { EvalInspectResult } from '../workflows/eval-inspect.js';
import { followRun } from './follow.js';
import { evalFailure, startEvalWorkflow } from './eval-start.js';
import { checkBackend } from './train.js';
import { checkLogPathFree, checkRunStore, runLogPath } from '../cookbook/stores/run-location.js';

export interface ResolvedInspectEval {
  workflowId: string;
  config: InspectEvalConfig;
  run: RunRef;
}

const slug = (s: string) => s.replace(/^tinker:\/\//, '').replace(/[^A-Za-z0-9_.-]+/g, '_').replace(/^[_.-]+|[_.-]+$/g, '').slice(-40) || 'x';

/**
 * The config from the command line. A task file (`path.py@name`, or `path.py` for its only task) is
 * made absolute and must exist; any other name is Inspect's to resolve (a registered task).
 */
export function resolveInspectEval(model: string, task: string, args: { limit?: string; set?: string[] }, opts: { runsDir?: string; workflowId?: string } = {}): ResolvedInspectEval {
  const raw: Record<string, unknown> = { model, task };
  if (args.limit !== undefined) {
    if (!/^\d+$/.test(args.limit) || Number(args.limit) < 1) throw new ConfigError(`--limit: "${args.limit}" is not a positive integer`);
    raw.limit = Number(args.limit);
  }
  const config = parseConfig(InspectEvalConfigSchema, applyOverrides(raw, args.set ?? []), 'eval --inspect');
  const [file, name] = config.task.split('@') as [string, string | undefined];
  if (file.endsWith('.py')) {
    const abs = isAbsolute(file) ? file : resolve(file);
    if (!existsSync(abs)) throw new ConfigError(`--inspect: task file ${file} does not exist`);
    config.task = name ? `${abs}@${name}` : abs;
  }
  if (config.tokenizer_path !== null) config.tokenizer_path = resolve(config.tokenizer_path);
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const workflowId = opts.workflowId ?? `eval-${config.run_name ?? `inspect-${slug(name ?? file)}-${slug(config.model)}`}-${stamp}`;
  const logPath = runLogPath(config.log_path, opts.runsDir, workflowId);
  config.log_path = logPath;
  checkLogPathFree(logPath);
  return { workflowId, config, run: { workflowId, kind: 'eval', logPath } };
}

export function startInspectEval(client: Client, r: ResolvedInspectEval, taskQueue = DEFAULT_TASK_QUEUE) {
  return startEvalWorkflow(client, 'evalInspectWorkflow', r, `--inspect ${r.config.task}`, taskQueue);
}

export async function inspectEvalCommand(model: string, task: string, o: { limit?: string; set?: string[]; detach?: boolean; workflowId?: string; engineUrl: string; taskQueue?: string; runsDir?: string; connect: () => Promise<Client> }): Promise<number> {
  const r = resolveInspectEval(model, task, o, { workflowId: o.workflowId, runsDir: o.runsDir });
  await checkRunStore(r.run.logPath);
  if (!r.config.model.startsWith('tinker://')) await checkBackend(r.config.base_url ?? o.engineUrl, r.config.model);
  const client = await o.connect();
  await startInspectEval(client, r, o.taskQueue);
  console.log(`started ${r.workflowId}: Inspect task ${r.config.task} on ${r.config.model} (the worker builds the Inspect AI venv on first use)`);
  console.log(`log dir  ${r.run.logPath}`);
  if (o.detach) return 0;
  let last = '';
  const result = await followRun<EvalInspectResult>(client, client.workflow.getHandle(r.workflowId), {
    onProgress: (p) => {
      const line = `inspect ${r.config.task}: ${p.status}`;
      if (line !== last) console.log(line);
      last = line;
    },
    note: (line) => console.log(line),
    pollMs: 1000,
  }).catch((err: unknown) => {
    throw evalFailure(r.workflowId, err, r.config.max_attempts);
  });
  console.log(`\n${result.table}\n\nresults  ${result.resultsPath}\ninspect  ${result.inspectLog}`);
  return 0;
}
