// Timing of steps (cookbook/timing.ts, cookbook/timing-store.ts, activities/timing.ts): the
// reference's aggregation, spans carried from the activities of a step to the row's writer through
// the run store, each activity counted once however often it is retried, and rolled back with the
// rows a restore undoes.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { reportFutureWait } from '../../src/activities/context.js';
import { rollBackTiming, stepTiming, withTiming } from '../../src/activities/timing.js';
import { isIntMetricKey } from '../../src/cookbook/metric-types.js';
import { RunStore, type RunKind, type RunRef } from '../../src/cookbook/run-store.js';
import { aggregateSpans, joinParts, nowMs, recordSpan, scopeSpan, timingRow, type Span } from '../../src/cookbook/timing.js';
import { TimingStore } from '../../src/cookbook/timing-store.js';
import { tempDir } from '../report/fixture.js';

const span = (name: string, start: number, end: number, extra: Partial<Span> = {}): Span => ({ name, duration: end - start, wall_start: start, wall_end: end, ...extra });

function newRun(kind: RunKind): RunRef {
  const run = { workflowId: `${kind}-timing`, kind, logPath: join(tempDir('cookbook-timing-'), 'run') };
  new RunStore(run.logPath).init({ workflowId: run.workflowId, kind, config: {} }, new Set());
  return run;
}

/** Two activities of a step (a rollout per group, the row's writer), timed as the worker times them. */
const activities = withTiming({
  async rollout({ group }: { run: RunRef; step: number; group: number }) {
    const start = nowMs();
    await scopeSpan('policy_sample', () => new Promise((r) => setTimeout(r, 5)));
    reportFutureWait({ requestType: 'Sample', startMs: start, endMs: nowMs(), polls: 1 });
    recordSpan('sampling', start, nowMs(), { part: true });
    return group;
  },
  async train({ run, step }: { run: RunRef; step: number }) {
    await scopeSpan('train_step', () => new Promise((r) => setTimeout(r, 5)));
    const timing = stepTiming(run, step);
    const store = new RunStore(run.logPath);
    store.writeMetrics({ step, loss: 1, ...timing.metrics });
    timing.write(store);
    return timing.metrics;
  },
  async saveCheckpoint({ name }: { run: RunRef; name: string; row: { next_step: number } }) {
    await scopeSpan('save_checkpoint', () => new Promise((r) => setTimeout(r, 2)));
    return name;
  },
  async closingRow({ run, step }: { run: RunRef; step: number }) {
    const timing = stepTiming(run, step);
    timing.write(new RunStore(run.logPath));
    return timing.metrics;
  },
});

/** An activity execution as a worker runs it: its own context, scheduled a few ms before it starts. */
const execute = <I, R>(fn: (input: I) => Promise<R>, input: I, attempt = 1): Promise<R> =>
  new MockActivityEnvironment({ attempt, scheduledTimestampMs: Date.now() - 20, currentAttemptScheduledTimestampMs: Date.now() - 3 }).run(fn as (input: I) => Promise<R>, input) as Promise<R>;

afterEach(() => {
  delete process.env.COOKBOOK_TIMING;
});

describe('timing spans', () => {
  it("aggregates as the reference's IterationWindow: once time/<name>, repeated :total/:count/:mean/:max", () => {
    expect(aggregateSpans([span('get_batch', 0, 0.5), span('step', 0.5, 2), span('policy_sample', 0, 1), span('policy_sample', 0, 3)])).toEqual({
      'time/get_batch': 0.5,
      'time/step': 1.5,
      'time/policy_sample:total': 4,
      'time/policy_sample:count': 2,
      'time/policy_sample:mean': 2,
      'time/policy_sample:max': 3,
    });
    expect(aggregateSpans([])).toEqual({});
    // Counts are Python ints in the reference's rows, the other timings floats.
    expect(isIntMetricKey('time/policy_sample:count')).toBe(true);
    expect(isIntMetricKey('time/policy_sample:total')).toBe(false);
    expect(isIntMetricKey('time/total')).toBe(false);
  });

  it("joins a step's parts of one name into one span; one activity's parts stay on its lane", () => {
    const joined = joinParts([
      span('sampling', 10, 12, { part: true, activity: 'rollout g0' }),
      span('sampling', 10.5, 14, { part: true, activity: 'rollout g1' }),
      span('evals', 9, 9.5, { part: true, activity: 'eval e0', worker: 'w' }),
      span('train_step', 14, 15, { activity: 'train' }),
    ]);
    expect(joined.map((s) => [s.name, s.wall_start, s.wall_end, s.activity, s.part])).toEqual([
      ['evals', 9, 9.5, 'eval e0', undefined],
      ['sampling', 10, 14, undefined, undefined],
      ['train_step', 14, 15, 'train', undefined],
    ]);
    expect(joined[1].duration).toBe(4);
  });

  it("timing_spans.jsonl rows: the reference's shape, relative wall times, one row per step however often it is written", () => {
    const run = newRun('rl');
    const store = new RunStore(run.logPath);
    const row = timingRow(3, [span('step', 100, 101.5, { activity: 'a', worker: 'w' }), span('get_batch', 100.25, 100.5)]);
    expect(row).toEqual({ step: 3, wall_origin: 100, spans: [span('step', 0, 1.5, { activity: 'a', worker: 'w' }), span('get_batch', 0.25, 0.5)] });
    store.writeTimingSpans(row);
    // Python's json.dumps: floats keep their ".0", the step is an int.
    expect(readFileSync(store.timingSpansJsonl, 'utf8')).toBe(
      '{"step": 3, "spans": [{"name": "step", "duration": 1.5, "wall_start": 0.0, "wall_end": 1.5, "activity": "a", "worker": "w"}, {"name": "get_batch", "duration": 0.25, "wall_start": 0.25, "wall_end": 0.5}], "wall_origin": 100.0}\n',
    );
    store.writeTimingSpans(timingRow(4, [span('step', 102, 103)]));
    // A retried step rewrites its row and drops the rows after it (as metrics rows).
    store.writeTimingSpans(timingRow(3, [span('step', 200, 201)]));
    expect(store.readTimingSpans().map((r) => [r.step, r.wall_origin])).toEqual([[3, 200]]);
    store.truncateTimingSpans(3);
    expect(store.readTimingSpans()).toEqual([]);
  });

  it("skips a span file it cannot read instead of failing the step's row", () => {
    const run = newRun('rl');
    const spans = new TimingStore(run.logPath);
    spans.write('step_000001/a.json', [span('x', 1, 2)]);
    spans.write('step_000001/b.json', [span('y', 1, 2)]);
    writeFileSync(join(run.logPath, '.cookbook', 'store', 'timing', 'step_000001', 'b.json'), '[{"name": "y", "dur');
    expect(spans.readStep(1).map((s) => s.name)).toEqual(['x']);
    expect(spans.readStep(1, 'step_000001/a.json')).toEqual([]);
  });
});

describe('timing of activities', () => {
  it("carries every activity's spans to the step's row once: a retried activity rewrites its own", async () => {
    const run = newRun('rl');
    await execute(activities.rollout, { run, step: 0, group: 0 });
    await execute(activities.rollout, { run, step: 0, group: 0 }, 2); // a retry of group 0
    await execute(activities.rollout, { run, step: 0, group: 1 });
    const dir = join(run.logPath, '.cookbook', 'store', 'timing', 'step_000000');
    expect(existsSync(join(dir, 'rollout-g0.json')) && existsSync(join(dir, 'rollout-g1.json'))).toBe(true);

    const metrics = await execute(activities.train, { run, step: 0 });
    // Two groups, not three: the retry replaced its first attempt.
    expect(metrics['time/policy_sample:count']).toBe(2);
    expect(metrics['time/backend_wait:count']).toBe(2);
    expect(metrics['time/sampling']).toBeGreaterThan(0); // the groups' parts, joined
    expect(metrics['time/train_step']).toBeGreaterThan(0);
    expect(metrics['time/queue_wait:count']).toBe(3); // each activity waited in the task queue
    expect(metrics['time/activity_retry']).toBeGreaterThan(0); // the retried group's failed attempt
    expect(metrics['time/total']).toBeGreaterThanOrEqual(metrics['time/sampling']);
    expect(readFileSync(new RunStore(run.logPath).metricsJsonl, 'utf8')).toContain('"time/policy_sample:count": 2,');

    // The row's writer retried: still one metrics row and one timing row for the step.
    await execute(activities.train, { run, step: 0 });
    const store = new RunStore(run.logPath);
    expect(store.readMetrics().map((r) => r.step)).toEqual([0]);
    const rows = store.readTimingSpans();
    expect(rows.map((r) => r.step)).toEqual([0]);
    expect(rows[0].spans.filter((s) => s.name === 'policy_sample').map((s) => s.activity)).toEqual(['rollout g0', 'rollout g1']);
    expect(rows[0].spans.every((s) => s.wall_start >= 0 && s.wall_end >= s.wall_start)).toBe(true);
    expect(Math.min(...rows[0].spans.map((s) => s.wall_start))).toBe(0);
  });

  it('SL rows have no time/total; a row nothing worked for (RL closing totals) has no timing', async () => {
    const sl = newRun('sl');
    expect(Object.keys(await execute(activities.train, { run: sl, step: 0 }))).not.toContain('time/total');
    const rl = newRun('rl');
    // The checkpoint saved after the last step is timed under the step after it, which never runs.
    await execute(activities.saveCheckpoint, { run: rl, name: '000005', row: { next_step: 5 } });
    expect(new TimingStore(rl.logPath).readStep(5).map((s) => [s.name, s.activity])).toEqual([['queue_wait', 'saveCheckpoint 000005'], ['save_checkpoint', 'saveCheckpoint 000005']]);
    expect(await execute(activities.closingRow, { run: rl, step: 5 })).toEqual({});
    expect(new RunStore(rl.logPath).readTimingSpans()).toEqual([]);
    // Before a step that does run, it is part of that step's row.
    await execute(activities.rollout, { run: rl, step: 5, group: 0 });
    expect(await execute(activities.closingRow, { run: rl, step: 5 })).toHaveProperty('time/save_checkpoint');
  });

  it("a restore forgets the spans and timing rows of the steps it replays", async () => {
    const run = newRun('rl');
    for (const step of [0, 1]) {
      await execute(activities.rollout, { run, step, group: 0 });
      await execute(activities.train, { run, step });
    }
    await execute(activities.rollout, { run, step: 2, group: 0 });
    rollBackTiming(run, 1);
    expect(new RunStore(run.logPath).readTimingSpans().map((r) => r.step)).toEqual([0]);
    expect(new TimingStore(run.logPath).readStep(1)).toEqual([]);
    expect(new TimingStore(run.logPath).readStep(2)).toEqual([]);
    expect(new TimingStore(run.logPath).readStep(0).length).toBeGreaterThan(0);
  });

  it('COOKBOOK_TIMING=off times nothing', async () => {
    process.env.COOKBOOK_TIMING = 'off';
    const run = newRun('rl');
    await execute(activities.rollout, { run, step: 0, group: 0 });
    expect(await execute(activities.train, { run, step: 0 })).toEqual({});
    expect(existsSync(join(run.logPath, '.cookbook', 'store', 'timing'))).toBe(false);
    expect(existsSync(new RunStore(run.logPath).timingSpansJsonl)).toBe(false);
  });
});
