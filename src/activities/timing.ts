// Timing in the worker: every activity that works for a step of a run gets a timing window for its
// execution (cookbook/timing.ts records spans into it), with the waits before it started (Temporal's
// queue, failed attempts). When it completes, its spans are stored under its logical position
// (cookbook/timing-store.ts), where the activity that writes the step's metrics row reads them: that
// one merges every span of the step into the row (`time/*`) and writes the step's
// `timing_spans.jsonl` row. Nothing of it crosses Temporal, and a retried or replayed activity
// rewrites its own file, so each row counts each activity once.
import { hostname } from 'node:os';
import { Context, type Info } from '@temporalio/activity';
import { runLogger } from '../cookbook/logging.js';
import { RunStore, type RunRef } from '../cookbook/run-store.js';
import { aggregateSpans, joinParts, nowMs, recordSpan, scopeSpan, setSpanWindowLookup, timingRow, WAIT_SPANS, type Span, type SpanWindow, type TimingRow } from '../cookbook/timing.js';
import { stepSpansFile, TimingStore } from '../cookbook/timing-store.js';

/** This worker process, as Temporal names workers: a Gantt lane's second half. */
const WORKER = `${process.pid}@${hostname()}`;

/** Timing is on unless COOKBOOK_TIMING=off (the baseline of bench/overhead, which measures its cost). */
export function timingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.COOKBOOK_TIMING !== 'off' && env.COOKBOOK_TIMING !== '0';
}

/** The timing window of one activity execution. */
export class ActivityTiming implements SpanWindow {
  readonly spans: Span[] = [];
  /** Where its spans are stored when it completes (relative to the run's timing folder); undefined: nowhere. */
  location: string | undefined;
  /** Its spans went into the step's row (it wrote the row): nothing left to store. */
  consumed = false;
  private closed = false;

  constructor(
    readonly run: RunRef,
    readonly step: number,
    key: string,
    readonly lane: string,
  ) {
    this.location = stepSpansFile(step, key);
  }

  record(span: Span): void {
    // Late spans of work the activity left running (a discarded rollout) belong to no row.
    if (!this.closed) this.spans.push({ ...span, activity: this.lane, worker: WORKER });
  }

  /** Stores the spans elsewhere than in the step's folder (async RL's rollouts: by trajectory group), or nowhere. */
  storeAt(rel: string | undefined): void {
    this.location = rel;
  }

  close(): void {
    this.closed = true;
  }
}

const windows = new WeakMap<Context, ActivityTiming>();

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined; // called outside an activity (unit tests drive activity functions directly)
  }
}

/** The timing window of the activity running in this async context, if it has one. */
export function currentTiming(): ActivityTiming | undefined {
  const ctx = activityContext();
  return ctx ? windows.get(ctx) : undefined;
}

setSpanWindowLookup(currentTiming);

const isRunRef = (run: unknown): run is RunRef => typeof (run as RunRef | undefined)?.logPath === 'string';

/** The step a checkpoint save works for: the one its row resumes at, or the one named by a sampler save (`sampler_000003`). */
function checkpointStep(input: { name?: unknown; row?: { next_step?: unknown }; beforeFirstStep?: unknown }): number | undefined {
  if (input.beforeFirstStep === true) return undefined;
  if (typeof input.row?.next_step === 'number') return input.row.next_step;
  const m = typeof input.name === 'string' ? /_(\d{6})$/.exec(input.name) : null;
  return m ? Number(m[1]) : undefined;
}

/** Which step's row an activity's spans belong to, and its logical position in that step (its file and lane). */
function attribution(activity: string, input: any): { run: RunRef; step: number; key: string; lane: string } | undefined {
  const run = input?.run ?? input?.step?.run;
  if (!isRunRef(run)) return undefined;
  const step = typeof input.step === 'number' ? input.step : typeof input.step?.step === 'number' ? input.step.step : activity === 'saveCheckpoint' ? checkpointStep(input) : undefined;
  if (step === undefined) return undefined;
  const position = [
    activity === 'saveCheckpoint' ? String(input.name) : undefined,
    typeof input.group === 'number' ? `g${input.group}` : undefined,
    typeof input.substep === 'number' ? `s${input.substep}` : undefined,
    typeof input.index === 'number' ? `e${input.index}` : undefined,
    input.attempt ? `a${input.attempt}` : undefined,
  ].filter((p): p is string => p !== undefined);
  return { run, step, key: [activity, ...position].join('-'), lane: [activity, ...position].join(' ') };
}

/** Time before this attempt started: in the task queue, and on earlier attempts that failed (with their backoff). */
function recordWaits(info: Info, startedMs: number): void {
  const scheduled = info.currentAttemptScheduledTimestampMs;
  if (scheduled > 0) recordSpan('queue_wait', scheduled, startedMs);
  if (info.attempt > 1 && info.scheduledTimestampMs > 0) recordSpan('activity_retry', info.scheduledTimestampMs, scheduled);
}

/** The activities, each timed when it works for a step of a run (and timing is on). */
export function withTiming<A extends object>(activities: A): A {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities) as Array<[string, (input: unknown) => Promise<unknown>]>) {
    wrapped[name] = async (input: unknown) => {
      const startedMs = nowMs();
      const where = timingEnabled() ? attribution(name, input) : undefined;
      const ctx = where && activityContext();
      if (!where || !ctx) return fn(input);
      const timing = new ActivityTiming(where.run, where.step, where.key, where.lane);
      windows.set(ctx, timing);
      try {
        recordWaits(ctx.info, startedMs);
        const result = await fn(input);
        store(timing);
        return result;
      } finally {
        timing.close();
        windows.delete(ctx);
      }
    };
  }
  return wrapped as A;
}

/** A completed activity's spans, for the step row's writer; a failed write costs the row these spans, never the activity. */
function store(timing: ActivityTiming): void {
  if (timing.consumed || !timing.location || timing.spans.length === 0) return;
  try {
    new TimingStore(timing.run.logPath).write(timing.location, timing.spans);
  } catch (err) {
    runLogger(new RunStore(timing.run.logPath).logFile, { run: timing.run.workflowId }).warn({ err: (err as Error).message, step: timing.step }, 'timing spans not stored');
  }
}

export interface StepTiming {
  /** `time/*` for the row (none when nothing was timed for the step). */
  metrics: Record<string, number>;
  /** Writes the step's timing_spans.jsonl row (after its metrics row). */
  write(store: RunStore): void;
}

const NO_TIMING: StepTiming = { metrics: {}, write: () => undefined };

/**
 * Work for a step, as opposed to waits and to a checkpoint saved between two steps (timed in the
 * row of the step after it: the row before it is written by then).
 */
const isStepWork = (s: Span) => !WAIT_SPANS.has(s.name) && !s.activity?.startsWith('saveCheckpoint ');

/**
 * The timing of `step`, for the activity that writes its metrics row: the spans every activity of
 * the step stored, and this activity's own so far, aggregated as the reference does. `time/total`
 * runs from the step's earliest span (the first activity's scheduling) to now, in every loop but
 * SL, whose rows do not have it (the reference sets it after merging). A row no step activity
 * worked for (RL's closing totals row) gets no timing, as the reference's.
 */
export function stepTiming(run: RunRef, step: number): StepTiming {
  if (!timingEnabled()) return NO_TIMING;
  const own = currentTiming();
  const others = new TimingStore(run.logPath).readStep(step, own?.location);
  const mine = own?.step === step ? own.spans : [];
  if (![...others, ...mine].some(isStepWork)) return NO_TIMING;
  if (own && own.step === step) own.consumed = true;
  const spans = joinParts([...others, ...mine]);
  const metrics = aggregateSpans(spans);
  const row: TimingRow = timingRow(step, spans);
  if (run.kind !== 'sl') metrics['time/total'] = nowMs() / 1000 - row.wall_origin;
  return { metrics, write: (store) => store.writeTimingSpans(row) };
}

/**
 * Work of the step's evals: a part of the span that covers every evaluator activity of the step,
 * `evals` in SL and DPO, `run_evals` in RL and distillation (the reference's names).
 */
export async function asEvalsPart<T>(run: RunRef, fn: () => Promise<T>): Promise<T> {
  const start = nowMs();
  try {
    return await fn();
  } finally {
    recordSpan(run.kind === 'sl' || run.kind === 'dpo' ? 'evals' : 'run_evals', start, nowMs(), { part: true });
  }
}

/** One evaluator on the pre-step weights: part of the step's evals, and in SL and DPO `run_evaluator` (the reference's scope in their `run_evals`). */
export function asEvaluator<T>(run: RunRef, fn: () => Promise<T>): Promise<T> {
  return asEvalsPart(run, () => (run.kind === 'sl' || run.kind === 'dpo' ? scopeSpan('run_evaluator', fn) : fn()));
}

/** Spans an activity stored away from any step (async RL's rollouts), by location. */
export function storedSpans(run: RunRef, rel: string): Span[] {
  return timingEnabled() ? new TimingStore(run.logPath).read(rel) : [];
}

/** After a restore: the spans and timing rows of the steps that are replayed are forgotten with their metrics rows. */
export function rollBackTiming(run: RunRef, fromStep: number): void {
  new TimingStore(run.logPath).removeFrom(fromStep);
  new RunStore(run.logPath).truncateTimingSpans(fromStep);
}
