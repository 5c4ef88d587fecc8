// The reference's own training loops (reference_loops.py: tinker-cookbook 0.6.1 + SDK 0.38.0,
// unmodified) and this project's workflows, run on one engine with the same model, data and
// hyperparameters. Our config file for a loop is the single source: the reference's flat config is
// derived from its resolved form, so the two sides cannot drift apart. Used by the loop-parity
// suite (loops.parity.test.ts) and by `npm run bench:reference -- --loop <loop>`.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRun, type ResolvedRun } from '../../../src/cli/train.js';
import { RunStore } from '../../../src/cookbook/run-store.js';
import { cacheRoot } from '../../../src/stack/cache.mjs';
import { ensureReferenceEnv } from '../../../scripts/lib/reference-env.mjs';
import { testRun, withWorker, type TestStack } from '../../support/stack.js';

export type Loop = 'sl' | 'dpo' | 'rl' | 'rl_async' | 'rl_async_stream' | 'distill' | 'off_policy' | 'off_policy_multi' | 'decisions' | 'sdft';
export const LOOPS: readonly Loop[] = ['sl', 'dpo', 'rl', 'rl_async', 'rl_async_stream', 'distill', 'off_policy', 'off_policy_multi', 'decisions', 'sdft'];
/** The run kind of a loop's config (`cookbook train <kind>`): the loop's name where not listed. */
const KIND: Partial<Record<Loop, string>> = { rl_async: 'rl', rl_async_stream: 'rl', off_policy: 'distill_off_policy', off_policy_multi: 'distill_off_policy' };

const here = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = path.resolve(here, '..', '..', '..');
export const DRIVER = path.join(here, 'reference_loops.py');
export const configPath = (loop: Loop) => path.join(here, `${loop}.json`);

type Row = Record<string, unknown>;

/** Wall-clock marks of one run, in ms since the epoch: the loop set up, each step's row, the end. */
export interface LoopTimes {
  ready: number;
  done: number[];
  end: number;
}

/** One activity of our run, from its history: type and when it was scheduled, started and completed (ms). */
export interface ActivitySpan {
  type: string;
  summary: string;
  scheduled: number;
  started: number;
  completed: number;
}

export interface LoopResult {
  times: LoopTimes;
  /** Ours only: every completed activity. */
  activities?: ActivitySpan[];
  metrics: Row[];
  checkpoints: Row[];
  logPath: string;
}

export interface ReferenceResult extends LoopResult {
  /** Every file the loop wrote under its log path, relative. */
  files: string[];
}

const REFERENCE_ENV = { TINKER_API_KEY: 'tml-parity', TINKER_TELEMETRY: '0', HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' };

function runPython(python: string, args: string[], logFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [DRIVER, ...args], { env: { ...process.env, ...REFERENCE_ENV }, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => out.push(c));
    child.on('error', reject);
    child.on('exit', (code) => {
      const text = Buffer.concat(out).toString();
      writeFileSync(logFile, text);
      if (code === 0) resolve();
      else reject(new Error(`reference_loops.py ${args[0]} exited ${code} (log: ${logFile}):\n${text.slice(-4000)}`));
    });
  });
}

export interface ReferenceModels {
  python: string;
  /** tiny-qwen3 as a checkpoint folder: a base model for the engine and a tokenizer name for both sides. */
  student: string;
  /** The same with seeded noise on every weight: a distillation teacher that predicts differently. */
  teacher: string;
}

/** The reference venv and the two model folders, written once per engine model code and driver. */
export async function referenceModels(): Promise<ReferenceModels> {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const key = createHash('sha256')
    .update(readFileSync(path.join(REPO_ROOT, 'engine', 'tinker_engine', 'base_models.py')))
    .update(readFileSync(DRIVER))
    .digest('hex')
    .slice(0, 12);
  const dir = path.join(cacheRoot(), `parity-models-${key}`);
  const student = path.join(dir, 'tiny-qwen3');
  const teacher = path.join(dir, 'tiny-qwen3-teacher');
  mkdirSync(dir, { recursive: true });
  // make-checkpoint writes a .tmp folder and renames it: a folder that exists is complete.
  await Promise.all([
    existsSync(student) ? undefined : runPython(python, ['make-checkpoint', '--out', student], path.join(dir, 'student.log')),
    existsSync(teacher) ? undefined : runPython(python, ['make-checkpoint', '--out', teacher, '--perturb-seed', '1'], path.join(dir, 'teacher.log')),
  ]);
  return { python, student, teacher };
}

/** Our run of `loop`: its config file with the model folders and any overrides. */
export function ourRun(stack: TestStack, loop: Loop, models: ReferenceModels, overrides: string[] = []): ResolvedRun {
  const modelOverrides = [`model_name=${models.student}`];
  if (loop === 'distill' || loop === 'off_policy' || loop === 'off_policy_multi') modelOverrides.push(`dataset_configs.0.teacher_config.base_model=${models.teacher}`);
  // MOPD: the second domain's teacher is another model (the student's base), so routing shows.
  if (loop === 'off_policy_multi') modelOverrides.push(`dataset_configs.1.teacher_config.base_model=${models.student}`);
  return testRun(stack, configPath(loop), [...modelOverrides, ...overrides], KIND[loop] ?? loop);
}

/**
 * The reference's flat config (reference_loops.py LOOP_KEYS) for our resolved run. What the
 * reference fixes in its recipes (linear LR schedule, arithmetic with few-shot, no evals or saves)
 * our config files state explicitly; `checkSameSettings` refuses one that does not.
 */
export function referenceConfig(loop: Loop, run: ResolvedRun, models: ReferenceModels, workDir: string): Record<string, unknown> {
  const cfg = run.config as any;
  const common = { model: models.student, renderer_name: cfg.renderer_name ?? 'qwen3', learning_rate: cfg.learning_rate, lora_rank: cfg.lora_rank, steps: cfg.max_steps };
  switch (loop) {
    case 'sl':
      return { ...common, data: cfg.dataset.file_path, batch_size: cfg.dataset.batch_size, max_length: cfg.dataset.max_length, cache_renderer: true };
    case 'dpo':
      return { ...common, data: comparisonsForReference(cfg.dataset.file_path, workDir), batch_size: cfg.dataset.batch_size, max_length: cfg.dataset.max_length, dpo_beta: cfg.dpo_beta };
    case 'rl':
    case 'rl_async':
    case 'rl_async_stream':
      return {
        ...common,
        batch_size: cfg.dataset.batch_size,
        group_size: cfg.dataset.group_size,
        max_tokens: cfg.max_tokens,
        loss_fn: cfg.async_config?.loss_fn ?? cfg.loss_fn,
        temperature: cfg.temperature,
        sampling_seed: cfg.seed ?? 0,
        async_max_steps_off_policy: cfg.async_config?.max_steps_off_policy ?? null,
        ...(cfg.stream_minibatch_config ? { stream_num_minibatches: cfg.stream_minibatch_config.num_minibatches } : {}),
      };
    case 'decisions':
      return {
        ...common,
        data: cfg.data_path,
        validation: cfg.validation_data_path,
        max_train_questions: cfg.max_train_questions,
        max_validation_questions: cfg.max_validation_questions,
        batch_size: cfg.batch_size,
        epochs: cfg.epochs,
        eval_every: cfg.eval_every,
        loss_fn: cfg.loss_fn,
        seed: cfg.seed,
      };
    case 'distill': {
      const dc = cfg.dataset_configs[0];
      return {
        ...common,
        data: dc.dataset.file_path,
        teacher_model: models.teacher,
        batch_size: dc.groups_per_batch,
        group_size: dc.dataset.group_size,
        max_tokens: cfg.max_tokens,
        kl_penalty_coef: cfg.kl_penalty_coef,
        temperature: cfg.temperature,
        loss_fn: cfg.loss_fn,
        sampling_seed: cfg.seed ?? 0,
      };
    }
    case 'off_policy':
    case 'off_policy_multi':
      return {
        ...common,
        datasets: cfg.dataset_configs.map((dc: any) => ({
          data: dc.dataset.file_path,
          teacher_model: dc.teacher_config.base_model,
          weight: dc.weight,
          batch_size: dc.dataset.batch_size,
          max_length: dc.dataset.max_length,
        })),
        batch_size: cfg.batch_size,
        n_teacher_targets: cfg.n_teacher_targets,
        teacher_concurrency: cfg.teacher_concurrency,
      };
    // The teacher is the student's own base model (the reference's create_sampling_client(base_model)).
    case 'sdft':
      return {
        ...common,
        data: cfg.dataset.file_path,
        domain: cfg.dataset.domain,
        batch_size: cfg.dataset.groups_per_batch,
        group_size: cfg.dataset.group_size,
        max_tokens: cfg.max_tokens,
        temperature: cfg.temperature,
        topk: cfg.topk,
        reverse: cfg.reverse,
        max_context_length: cfg.max_context_length,
      };
  }
}

/**
 * The reference's ComparisonBuilderFromJsonl reads only {"comparison", "label"} rows; a file of
 * ours may also hold {prompt_conversation, chosen, rejected} rows, which are the same comparison
 * with label "A".
 */
function comparisonsForReference(file: string, workDir: string): string {
  const text = readFileSync(file, 'utf8');
  const rows = text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Row);
  const out = rows.map((row) => {
    if ('comparison' in row) return JSON.stringify({ comparison: row.comparison, label: row.label });
    const { prompt_conversation } = row as { prompt_conversation: unknown };
    return JSON.stringify({ comparison: { prompt_conversation, completion_A: row.chosen, completion_B: row.rejected }, label: 'A' });
  });
  const dst = path.join(workDir, `reference-${path.basename(file)}`);
  writeFileSync(dst, out.map((l) => `${l}\n`).join(''));
  return dst;
}

/**
 * Runs the reference's loops in one Python process (its imports, seconds, paid once), each on its
 * own log path under `workDir/reference/<loop>`.
 */
export async function runReferenceLoops(
  models: ReferenceModels,
  baseUrl: string,
  configs: Partial<Record<Loop, Record<string, unknown>>>,
  workDir: string,
): Promise<Partial<Record<Loop, ReferenceResult>>> {
  const configDir = path.join(workDir, 'reference-configs');
  const outDir = path.join(workDir, 'reference');
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(configDir, { recursive: true });
  for (const loop of LOOPS) {
    rmSync(path.join(configDir, `${loop}.json`), { force: true });
    if (configs[loop]) writeFileSync(path.join(configDir, `${loop}.json`), JSON.stringify(configs[loop], null, 2));
  }
  await runPython(models.python, ['all', '--base-url', baseUrl, '--config-dir', configDir, '--out-dir', outDir], path.join(workDir, 'reference.log'));
  const results: Partial<Record<Loop, ReferenceResult>> = {};
  for (const loop of LOOPS) {
    if (!configs[loop]) continue;
    const r = JSON.parse(readFileSync(path.join(outDir, `${loop}.json`), 'utf8')) as {
      ready: number;
      done: Array<{ step: number; t: number }>;
      end: number;
      metrics: Row[];
      checkpoints: Row[];
      files: string[];
    };
    results[loop] = {
      times: { ready: r.ready * 1000, done: r.done.map((d) => d.t * 1000), end: r.end * 1000 },
      metrics: r.metrics,
      checkpoints: r.checkpoints,
      files: r.files,
      logPath: path.join(outDir, loop),
    };
  }
  return results;
}

/** The activity whose completion means a step's row is written, per loop and pipelining. */
const STEP_DONE_ACTIVITIES: Record<Loop, string[]> = {
  sl: ['slStep', 'slFinish'],
  dpo: ['dpoStep', 'dpoFinish'],
  rl: ['rlTrain', 'rlStreamFinish'],
  rl_async: ['rlTrain'],
  rl_async_stream: ['rlStreamFinish'],
  distill: ['distillTrain'],
  off_policy: ['offPolicyDistillTrain'],
  off_policy_multi: ['offPolicyDistillTrain'],
  decisions: ['decisionsStep'],
  sdft: ['sdftTrain'],
};

const tsMs = (ts: { seconds?: unknown; nanos?: number | null } | null | undefined) => Number(ts?.seconds ?? 0) * 1000 + (ts?.nanos ?? 0) / 1e6;

/** The summary a workflow gave an activity (user metadata), or ''. */
function summaryOf(e: { userMetadata?: { summary?: { data?: Uint8Array | null } | null } | null }): string {
  const data = e.userMetadata?.summary?.data;
  if (!data) return '';
  try {
    return JSON.parse(Buffer.from(data).toString('utf8')) as string;
  } catch {
    return '';
  }
}

/** Our workflow run to completion by an in-process worker; its times from the workflow history. */
export async function runOurLoop(stack: TestStack, loop: Loop, run: ResolvedRun): Promise<LoopResult> {
  const history = await withWorker(stack, async () => {
    const handle = await startRun(stack.client, run, stack.taskQueue);
    await handle.result();
    return handle.fetchHistory();
  });
  const scheduled = new Map<string, { type: string; summary: string; at: number }>();
  const started = new Map<string, number>();
  const activities: ActivitySpan[] = [];
  let ready: number | undefined;
  const done: number[] = [];
  let end = NaN;
  for (const e of history.events ?? []) {
    const at = tsMs(e.eventTime);
    const sched = e.activityTaskScheduledEventAttributes;
    if (sched) scheduled.set(String(e.eventId), { type: sched.activityType?.name ?? '', summary: summaryOf(e), at });
    if (e.activityTaskStartedEventAttributes) started.set(String(e.activityTaskStartedEventAttributes.scheduledEventId), at);
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed) {
      const id = String(completed.scheduledEventId);
      const { type, summary, at: scheduledAt } = scheduled.get(id) ?? { type: '', summary: '', at: NaN };
      activities.push({ type, summary, scheduled: scheduledAt, started: started.get(id) ?? NaN, completed: at });
      if (type === 'createModel') ready = at;
      if (STEP_DONE_ACTIVITIES[loop].includes(type)) done.push(at);
    }
    if (e.workflowExecutionCompletedEventAttributes) end = at;
  }
  if (ready === undefined) throw new Error(`${loop}: no createModel completion in the workflow history`);
  const store = new RunStore(run.run.logPath);
  return { times: { ready, done, end }, activities, metrics: store.readMetrics(), checkpoints: store.readCheckpoints() as Row[], logPath: run.run.logPath };
}

/** Seconds per step from the loop being ready: step k = done(k) − done(k−1). */
export function stepSeconds(t: LoopTimes): number[] {
  const marks = [t.ready, ...t.done];
  return t.done.map((_, k) => (marks[k + 1] - marks[k]) / 1000);
}

/** Raw metrics.jsonl lines: a value's JSON type (4 vs 4.0) is part of what users read. */
export function rawRows(logPath: string): Array<Record<string, string>> {
  const file = path.join(logPath, 'metrics.jsonl');
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => rawNumberTypes(line));
}

/** `{"a": 4, "b": 4.0}` → { a: 'int', b: 'float' } (strings, null and others by their JSON type). */
export function rawNumberTypes(line: string): Record<string, string> {
  const types: Record<string, string> = {};
  // Flat rows of scalars: every value is a number, a string, a boolean or null.
  const re = /"((?:[^"\\]|\\.)*)":\s*("(?:[^"\\]|\\.)*"|-?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|NaN|-?Infinity|true|false|null)/g;
  for (const m of line.matchAll(re)) {
    const [, key, value] = m;
    types[JSON.parse(`"${key}"`)] = /^-?\d+$/.test(value) ? 'int' : /^-?[\d.eE+-]+$|NaN|Infinity/.test(value) ? 'float' : value.startsWith('"') ? 'string' : value === 'null' ? 'null' : 'bool';
  }
  return types;
}
