// Where a step's time goes (the reference's utils/trace.py): named spans recorded while activities
// work, aggregated into a step's `time/*` metrics and written as its `timing_spans.jsonl` row.
//
// A span is recorded into the timing window of the activity whose async context it runs in. The
// activities layer plugs that lookup in (`setSpanWindowLookup`): this module imports nothing, since
// the cookbook code that records spans (rollouts) is also bundled into workflows, where no window
// ever exists and recording is a no-op.
//
// Aggregation is the reference's `IterationWindow.aggregate`: a name seen once gives `time/<name>`,
// a repeated one `time/<name>:total|:count|:mean|:max`. Span names are the reference's scope names
// where the same work happens (`get_batch`, `step`, `sampling`, `train_step`, …), plus the waits
// only a durable run has (WAIT_SPANS).

/** A span as stored between activities: wall times in seconds since the epoch. */
export interface Span {
  name: string;
  /** Seconds. */
  duration: number;
  wall_start: number;
  wall_end: number;
  /** The activity execution that recorded it (a Gantt lane), e.g. `rlRolloutGroup g3`. */
  activity?: string;
  /** The worker process (`pid@host`). */
  worker?: string;
  /**
   * A piece of a span that several activities make up together (the rollouts of `sampling`, the
   * submit and the collection of a pipelined `step`): a step's parts of one name are joined into
   * one span from the first start to the last end.
   */
  part?: true;
  /** What the span waited on (a backend request type), and in how many retrieve_future calls. */
  request?: string;
  polls?: number;
}

/** A `timing_spans.jsonl` row: the reference's `{step, spans}`, wall times relative to the earliest span. */
export interface TimingRow {
  step: number;
  spans: Span[];
  /** Seconds since the epoch of wall time 0 (not in the reference's rows: places steps on one timeline). */
  wall_origin: number;
}

/**
 * Time a durable run spends waiting rather than working, each its own span: in Temporal's task queue
 * before a worker started the activity (`queue_wait`), on attempts of the activity that failed and
 * their backoff (`activity_retry`), on a backend future (`backend_wait`: the retrieve_future long
 * poll, which covers the engine's queue, clock-cycle waits and its compute) and in backoff before a
 * backend call is retried (`backend_retry`).
 */
export const WAIT_SPANS: ReadonlySet<string> = new Set(['queue_wait', 'activity_retry', 'backend_wait', 'backend_retry']);

/** Where spans of the current async context go. */
export interface SpanWindow {
  record(span: Span): void;
}

let lookupWindow: () => SpanWindow | undefined = () => undefined;

/** Installed by the activities layer: the timing window of the activity running in this async context. */
export function setSpanWindowLookup(lookup: () => SpanWindow | undefined): void {
  lookupWindow = lookup;
}

/** High-resolution wall clock, in milliseconds since the epoch. */
export const nowMs = (): number => performance.timeOrigin + performance.now();

/** Records a finished span (times in ms since the epoch) into the current window, if any. */
export function recordSpan(name: string, startMs: number, endMs: number, extra: Omit<Span, 'name' | 'duration' | 'wall_start' | 'wall_end'> = {}): void {
  const window = lookupWindow();
  if (!window || !(endMs >= startMs)) return;
  window.record({ name, duration: (endMs - startMs) / 1000, wall_start: startMs / 1000, wall_end: endMs / 1000, ...extra });
}

/** Runs `fn` as the span `name` (the reference's `scope_span`); without a window it only runs `fn`. */
export async function scopeSpan<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
  if (!lookupWindow()) return fn();
  const start = nowMs();
  try {
    return await fn();
  } finally {
    recordSpan(name, start, nowMs());
  }
}

/** `promise`, recorded as each of `names` from `startMs` until it settles (work submitted earlier, awaited beside other work). */
export function spanUntilSettled<T>(names: readonly string[], startMs: number, promise: Promise<T>): Promise<T> {
  return promise.finally(() => {
    const end = nowMs();
    for (const name of names) recordSpan(name, startMs, end);
  });
}

/** Appends `value` to the list of `key` (a step can have thousands of spans of one name: no copying). */
export function groupInto<K, V>(groups: Map<K, V[]>, key: K, value: V): void {
  const list = groups.get(key);
  if (list) list.push(value);
  else groups.set(key, [value]);
}

/** A step's parts of one name joined into one span each (Span.part); other spans as they are. */
export function joinParts(spans: readonly Span[]): Span[] {
  const whole = spans.filter((s) => !s.part);
  const parts = new Map<string, Span[]>();
  for (const s of spans) if (s.part) groupInto(parts, s.name, s);
  for (const [name, pieces] of parts) {
    const start = Math.min(...pieces.map((p) => p.wall_start));
    const end = Math.max(...pieces.map((p) => p.wall_end));
    // One activity's parts stay on its lane; parts of several make a step-level span.
    const activities = new Set(pieces.map((p) => p.activity));
    whole.push({ name, duration: end - start, wall_start: start, wall_end: end, ...(activities.size === 1 && pieces[0].activity ? { activity: pieces[0].activity, worker: pieces[0].worker } : {}) });
  }
  // Completion order, as the reference records spans when they end.
  return whole.sort((a, b) => a.wall_end - b.wall_end || a.wall_start - b.wall_start);
}

/** The reference's `IterationWindow.aggregate`: `time/<name>`, or `time/<name>:total|:count|:mean|:max` when repeated. */
export function aggregateSpans(spans: readonly Span[]): Record<string, number> {
  const byName = new Map<string, number[]>();
  for (const s of spans) groupInto(byName, s.name, s.duration);
  const metrics: Record<string, number> = {};
  for (const [name, durations] of byName) {
    if (durations.length === 1) {
      metrics[`time/${name}`] = durations[0];
      continue;
    }
    const total = durations.reduce((a, b) => a + b, 0);
    metrics[`time/${name}:total`] = total;
    metrics[`time/${name}:count`] = durations.length;
    metrics[`time/${name}:mean`] = total / durations.length;
    metrics[`time/${name}:max`] = Math.max(...durations);
  }
  return metrics;
}

/** A step's `timing_spans.jsonl` row: the reference's four fields per span (plus lane fields), relative to the earliest start. */
export function timingRow(step: number, spans: readonly Span[]): TimingRow {
  const origin = Math.min(...spans.map((s) => s.wall_start));
  return {
    step,
    spans: spans.map(({ part: _part, ...s }) => ({ ...s, wall_start: s.wall_start - origin, wall_end: s.wall_end - origin })),
    wall_origin: origin,
  };
}
