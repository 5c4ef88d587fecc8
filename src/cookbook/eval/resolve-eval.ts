// An eval's config from `cookbook eval`'s arguments (positionals, flags, `--set` overrides), its
// data and tokenizer paths made absolute and checked, and its workflow id and run folder. Apart
// from the CLI so the scheduled evals' activity resolves each checkpoint's eval the same way.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { applyOverrides, ConfigError, parseConfig } from '../config/overrides.js';
import type { RunRef } from '../run-store.js';
import { EvalConfigSchema, type EvalConfig } from './benchmark-config.js';
import { benchmarkDataPath } from './benchmark-data.js';
import { agenticConfigDefaults, isAgenticSuite, readsTaskFolders, terminalDataDir } from './suites/terminal.js';
import { checkLogPathFree, runLogPath } from '../stores/run-location.js';

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
  /** `--no-skip`: refuse rows this port cannot check rather than skip and report them (skip_unsupported false). */
  noSkip?: boolean;
}

function timestamp(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

const slug = (s: string) => s.replace(/^tinker:\/\//, '').replace(/[^A-Za-z0-9_.-]+/g, '_').replace(/^[_.-]+|[_.-]+$/g, '').slice(-40) || 'model';

/** The eval config from the command line: positionals, flags, then `--set` overrides (dotted keys). */
export function resolveEval(model: string, suite: string, args: EvalArgs, opts: { runsDir?: string; workflowId?: string } = {}): ResolvedEval {
  // The terminal suite's own defaults (the reference eval's), under any flag or --set.
  const raw: Record<string, unknown> = { ...(isAgenticSuite(suite) ? agenticConfigDefaults(suite) : {}), model, suite };
  if (args.limit !== undefined) {
    if (!/^\d+$/.test(args.limit)) throw new ConfigError(`--limit: "${args.limit}" is not a positive integer`);
    raw.limit = Number(args.limit);
  }
  if (args.data !== undefined) raw.data_path = args.data;
  if (args.noSkip) raw.skip_unsupported = false;
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
    if (key === 'data_path' && readsTaskFolders(config.suite)) {
      // A folder of task folders, or the name of a downloaded Harbor dataset.
      try {
        config.data_path = terminalDataDir(p, process.cwd());
      } catch (err) {
        throw new ConfigError(`--data: ${(err as Error).message}`);
      }
      continue;
    }
    if (key === 'data_path') {
      // A local folder or file, or an owner/name Hub id (read from the Hugging Face cache when it is there).
      try {
        config.data_path = benchmarkDataPath(p);
      } catch (err) {
        throw new ConfigError(`--data: ${(err as Error).message}`);
      }
      continue;
    }
    config[key] = isAbsolute(p) ? p : resolve(p);
    if (existsSync(config[key]!)) continue;
    throw new ConfigError(`${key}: ${p} does not exist`);
  }
  // A local model folder is passed on as an absolute path, like `train`'s model_name.
  if (config.model.startsWith('./') || config.model.startsWith('../')) config.model = resolve(config.model);
  const workflowId = opts.workflowId ?? `eval-${config.run_name ?? `${config.suite}-${slug(config.model)}`}-${timestamp()}`;
  const logPath = runLogPath(config.log_path, opts.runsDir, workflowId);
  config.log_path = logPath;
  checkLogPathFree(logPath);
  return { workflowId, config, run: { workflowId, kind: 'eval', logPath } };
}

