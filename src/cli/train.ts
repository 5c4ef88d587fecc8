// `cookbook train <kind> <config.json> [key=value …]`: resolve and validate the config, check the
// backend serves the model, start the workflow with a readable id, memo and search attributes.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import type { z } from 'zod';
import { applyOverrides, ConfigError, parseConfig } from '../cookbook/config/overrides.js';
import { RLConfigSchema } from '../cookbook/config/rl.js';
import { SupervisedConfigSchema } from '../cookbook/config/sl.js';
import type { RunKind, RunRef } from '../cookbook/run-store.js';
import { DEFAULT_TASK_QUEUE } from '../workers/worker.js';
import { KindKey, ModelKey, StatusKey, StepKey } from '../workflows/shared/search-attributes.js';

export const TRAINABLE_KINDS: Record<string, { schema: z.ZodType; workflowType: string; describe: (cfg: any) => string }> = {
  sl: {
    schema: SupervisedConfigSchema,
    workflowType: 'supervisedWorkflow',
    describe: (cfg) => `supervised fine-tune of ${cfg.model_name} on ${cfg.dataset.file_path ?? cfg.dataset.builtin}`,
  },
  rl: {
    schema: RLConfigSchema,
    workflowType: 'rlWorkflow',
    describe: (cfg) => `RL of ${cfg.model_name} on ${cfg.dataset.kind}${cfg.async_config ? ` (async, ≤${cfg.async_config.max_steps_off_policy} steps off-policy)` : ''}`,
  },
};

export function readConfigFile(path: string): Record<string, unknown> {
  if (!existsSync(path)) throw new ConfigError(`config file ${path} does not exist`);
  try {
    const raw = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('the top level must be an object');
    return raw;
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Paths in a config are relative to the config file, so a config works from any directory. */
function resolvePaths(cfg: Record<string, any>, baseDir: string): void {
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(baseDir, p));
  for (const key of ['file_path', 'test_file_path']) if (cfg.dataset?.[key]) cfg.dataset[key] = abs(cfg.dataset[key]);
  if (typeof cfg.model_name === 'string' && (cfg.model_name.startsWith('./') || cfg.model_name.startsWith('../'))) cfg.model_name = abs(cfg.model_name);
  for (const key of ['file_path', 'test_file_path']) {
    if (cfg.dataset?.[key] && !existsSync(cfg.dataset[key])) throw new ConfigError(`dataset.${key}: ${cfg.dataset[key]} does not exist`);
  }
}

function timestamp(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

export interface ResolvedRun {
  kind: RunKind;
  workflowId: string;
  config: Record<string, any>;
  run: RunRef;
}

export function resolveRun(kind: string, configPath: string, overrides: string[], opts: { runsDir?: string; workflowId?: string } = {}): ResolvedRun {
  const spec = TRAINABLE_KINDS[kind];
  if (!spec) throw new ConfigError(`unknown run kind "${kind}" (available: ${Object.keys(TRAINABLE_KINDS).join(', ')})`);
  const raw = applyOverrides(readConfigFile(configPath), overrides);
  const config = parseConfig(spec.schema, raw, configPath) as Record<string, any>;
  resolvePaths(config, dirname(resolve(configPath)));
  const name = config.run_name ?? basename(configPath).replace(/\.json$/, '');
  const workflowId = opts.workflowId ?? `${kind}-${name}-${timestamp()}`;
  const logPath = resolve(config.log_path ?? resolve(opts.runsDir ?? 'runs', workflowId));
  config.log_path = logPath;
  if (existsSync(resolve(logPath, '.cookbook', 'run.json'))) {
    throw new ConfigError(`log_path: ${logPath} already holds another run; choose another log_path or run_name`);
  }
  return { kind: kind as RunKind, workflowId, config, run: { workflowId, kind: kind as RunKind, logPath } };
}

/** Fails fast, with the list of served models, instead of a workflow that fails minutes later. */
export async function checkBackend(baseUrl: string, model: string): Promise<void> {
  let res: Response;
  try {
    res = await fetch(new URL('api/v1/get_server_capabilities', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`), {
      headers: { 'X-API-Key': process.env.TINKER_API_KEY ?? 'tml-local' },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throw new Error(`cannot reach the training backend at ${baseUrl} (${(err as Error).message}); start it with \`npx cookbook dev\` or set TINKER_BASE_URL`);
  }
  if (res.status === 401 || res.status === 403) throw new Error(`the training backend at ${baseUrl} rejected the API key (HTTP ${res.status}); check TINKER_API_KEY`);
  if (!res.ok) throw new Error(`the training backend at ${baseUrl} answered HTTP ${res.status} to get_server_capabilities`);
  const body = (await res.json()) as { supported_models?: Array<{ model_name?: string }> };
  const served = (body.supported_models ?? []).map((m) => m.model_name).filter(Boolean) as string[];
  const isLocalPath = isAbsolute(model) && existsSync(model);
  if (!isLocalPath && served.length > 0 && !served.includes(model)) {
    throw new ConfigError(`model_name: ${model} is not served by ${baseUrl} (served: ${served.join(', ')})`);
  }
}

export async function startRun(client: Client, r: ResolvedRun, taskQueue = DEFAULT_TASK_QUEUE) {
  const spec = TRAINABLE_KINDS[r.kind];
  return client.workflow.start(spec.workflowType, {
    taskQueue,
    workflowId: r.workflowId,
    args: [{ run: r.run, config: r.config }],
    memo: { config: r.config },
    staticSummary: spec.describe(r.config),
    typedSearchAttributes: [
      { key: KindKey, value: r.kind },
      { key: ModelKey, value: String(r.config.model_name) },
      { key: StepKey, value: 0 },
      { key: StatusKey, value: 'starting' },
    ],
    workflowIdConflictPolicy: 'FAIL',
  });
}
