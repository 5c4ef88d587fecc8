// The facts of an exported checkpoint's model card (README.md), from the run that saved it: the run
// folder whose checkpoints.jsonl lists the checkpoint (`--run DIR`, else the runs under ./runs, as
// `cookbook serve` finds a checkpoint's run), its kind, main settings, data and the metrics row of the
// checkpoint's step. The card itself is written by engine/tinker_engine/weights/model_card.py.
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { findRecordedCheckpoint } from '../serve/recorded-checkpoint.js';
import { REPO_ROOT } from '../stack/engine-env.mjs';

export interface CardRun {
  id: string;
  kind: string | null;
  log_path: string;
  checkpoint: string;
  recipe: Record<string, unknown>;
  data: string[];
  metrics: Record<string, number>;
  step: number | null;
}

export interface CardFacts {
  datasets: string[];
  tags: string[];
  cookbook_version: string;
  run: CardRun | null;
}

// Settings never shown: where things are and how to reach them.
const HIDDEN_SETTING = /(path|dir|url|key|token|secret|password|address|host|port)$/i;
const HIDDEN_METRIC = /^(progress|optim|time|timing)\//;
const HF_ID = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;
const MAX_METRICS = 20;
const TAG_OF_KIND: Record<string, string> = { sl: 'sft', rl: 'rl', dpo: 'dpo', distill: 'distillation', distill_off_policy: 'distillation', prompt_distill: 'distillation', sdft: 'sft' };

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

function readRows(file: string): Array<Record<string, unknown>> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        const row = JSON.parse(l) as unknown;
        return row && typeof row === 'object' ? [row as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

/** The datasets a config names (any depth: pipelines nest stage configs): Hub ids, builtins, files. */
export function dataOf(config: Record<string, unknown>, runDir: string): { data: string[]; hub: string[] } {
  const data: string[] = [];
  const hub: string[] = [];
  const walk = (v: unknown, depth: number) => {
    if (depth > 6) return;
    if (Array.isArray(v)) return v.forEach((x) => walk(x, depth + 1));
    if (!isObject(v)) return;
    if (isObject(v.hf) && typeof v.hf.path === 'string') {
      const path = v.hf.path;
      const local = existsSync(path) || existsSync(join(runDir, path));
      const split = typeof v.hf.split === 'string' ? ` (${v.hf.split})` : '';
      data.push(local ? `local dataset ${basename(path)}${split}` : `${path}${split}`);
      if (!local && HF_ID.test(path)) hub.push(path);
    }
    if (typeof v.builtin === 'string') data.push(`built-in dataset ${v.builtin}`);
    if (typeof v.file_path === 'string') data.push(`file ${basename(v.file_path)}`);
    for (const [k, x] of Object.entries(v)) if (k !== 'hf') walk(x, depth + 1);
  };
  walk(config, 0);
  return { data: [...new Set(data)], hub: [...new Set(hub)] };
}

/** Top-level scalar settings of the run's config, locations and credentials left out. */
function recipeOf(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    if (HIDDEN_SETTING.test(k) || v === null) continue;
    if (typeof v === 'number' || typeof v === 'boolean' || (typeof v === 'string' && v.length <= 200)) out[k] = v;
  }
  return out;
}

/** The metrics row of the checkpoint's step (else the last row), numbers only, bookkeeping left out. */
function metricsOf(rows: Array<Record<string, unknown>>, step: number | null): { metrics: Record<string, number>; step: number | null } {
  const row = (step !== null ? rows.find((r) => r.step === step) : undefined) ?? rows[rows.length - 1];
  if (!row) return { metrics: {}, step: null };
  const metrics: Record<string, number> = {};
  for (const [k, v] of Object.entries(row)) {
    if (k === 'step' || HIDDEN_METRIC.test(k) || typeof v !== 'number' || !Number.isFinite(v)) continue;
    if (Object.keys(metrics).length < MAX_METRICS) metrics[k] = v;
  }
  return { metrics, step: typeof row.step === 'number' ? row.step : null };
}

export function cookbookVersion(): string {
  const pkg = readJson(join(REPO_ROOT, 'package.json'));
  return isObject(pkg) && typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

/** The card's facts for a checkpoint; `run: null` when no run folder lists it. */
export function cardFacts(checkpoint: string, runDirs: string[] | undefined): CardFacts {
  const facts: CardFacts = { datasets: [], tags: [], cookbook_version: cookbookVersion(), run: null };
  const recorded = checkpoint.startsWith('tinker://') ? findRecordedCheckpoint(checkpoint, runDirs) : undefined;
  if (!recorded) return facts;
  const runDir = recorded.runDir;
  const config = readJson(join(runDir, 'config.json'));
  const record = readJson(join(runDir, '.cookbook', 'run.json'));
  const row = readRows(join(runDir, 'checkpoints.jsonl')).find((r) => r.sampler_path === checkpoint || r.state_path === checkpoint);
  const kind = isObject(record) && typeof record.kind === 'string' ? record.kind : null;
  const cfg = isObject(config) ? config : {};
  const { data, hub } = dataOf(cfg, runDir);
  const { metrics, step } = metricsOf(readRows(join(runDir, 'metrics.jsonl')), typeof row?.batch === 'number' ? row.batch : null);
  facts.datasets = hub;
  facts.tags = kind && TAG_OF_KIND[kind] ? [TAG_OF_KIND[kind]] : [];
  facts.run = {
    id: isObject(record) && typeof record.workflowId === 'string' ? record.workflowId : basename(runDir),
    kind,
    log_path: runDir,
    checkpoint,
    recipe: recipeOf(cfg),
    data,
    metrics,
    step,
  };
  return facts;
}
