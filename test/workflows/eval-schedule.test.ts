// Scheduled evaluations on the real stack (Temporal dev server with its Schedules, the engine over
// HTTP): a run's sampler checkpoints (real ones, saved on the engine) evaluated by a schedule's
// firings, each (checkpoint, benchmark) exactly once however the firings fall — one after another
// or overlapping — with the scores as curves in the run's report; `cookbook eval --benchmarks`
// runs one eval per benchmark and prints their summary; and (fuller tier) a worker killed while a
// scheduled eval samples is replaced without the finished chunks being sampled again.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScheduleNotFoundError, WorkflowFailedError, type Client } from '@temporalio/client';
import { createTinkerBackend, type TinkerBackend } from '../../src/backends/index.js';
import { evalCommand, benchmarkSummaryTable } from '../../src/cli/eval.js';
import { createEvalSchedule, EVAL_SCHEDULE_WORKFLOW, listEvalSchedules, parseBenchmarks, parseEvery, resolveEvalSchedule, unscheduleEval } from '../../src/cli/eval-schedule.js';
import { ConfigError } from '../../src/cookbook/config/overrides.js';
import type { EvalResultsFile } from '../../src/cookbook/eval/results.js';
import { scheduledEvalDir, scheduledEvalId } from '../../src/cookbook/eval/scheduled.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { buildReportHtml } from '../../src/report/report.js';
import type { EvalScheduleResult } from '../../src/workflows/eval-schedule.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import { cookbookOn } from '../support/cli.js';
import { startTestStack, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const MODEL = 'tiny-qwen3';
const EVAL_SET = ['max_tokens=8', 'chunk_size=1', 'concurrency=2', 'temperature=1.0'];
let counter = 0;

/** A training run's folder whose checkpoints.jsonl lists sampler checkpoints saved on the engine. */
class FakeTrainingRun {
  readonly workflowId: string;
  readonly logPath: string;
  private seq = 0;
  private constructor(
    stack: TestStack,
    private readonly session: Awaited<ReturnType<TinkerBackend['createTrainingSession']>>,
  ) {
    this.workflowId = `sl-sched-${process.pid}-${++counter}`;
    this.logPath = join(stack.dir, 'runs', this.workflowId);
    new RunStore(this.logPath).init({ workflowId: this.workflowId, kind: 'sl', config: { model_name: MODEL, log_path: this.logPath } }, new Set());
  }
  static async create(stack: TestStack, backend: TinkerBackend): Promise<FakeTrainingRun> {
    return new FakeTrainingRun(stack, await backend.createTrainingSession({ baseModel: MODEL, lora: { rank: 4, seed: 3 } }));
  }
  /** Saves sampler weights on the engine and records the checkpoint as a training run does. */
  async checkpoint(step: number): Promise<{ name: string; samplerPath: string }> {
    const name = String(step).padStart(6, '0');
    const samplerPath = (await (await this.session.saveWeightsForSampler(`${this.workflowId}-${name}`, { seqId: ++this.seq })).result()).path;
    const store = new RunStore(this.logPath);
    // batch is the step's index in its epoch (3 batches an epoch), as SL rows; next_step − 1 is the step.
    store.writeCheckpoint({ name, batch: step % 3, epoch: Math.floor(step / 3), sampler_path: samplerPath, next_step: step + 1 });
    store.writeMetrics({ step, loss: 1 / (step + 1) });
    return { name, samplerPath };
  }
}

/** Fires the schedule now and waits for that firing's workflow to end. */
async function fire(client: Client, scheduleId: string): Promise<string> {
  const handle = client.schedule.getHandle(scheduleId);
  const before = (await handle.describe()).info.numActionsTaken;
  await handle.trigger();
  let id = '';
  await waitUntil(`firing ${before + 1} of ${scheduleId}`, async () => {
    const d = await handle.describe();
    if (d.info.numActionsTaken <= before) return false;
    id = d.info.recentActions.at(-1)!.action.workflow.workflowId;
    return true;
  });
  return id;
}
const firingResult = (client: Client, id: string) => client.workflow.getHandle(id).result() as Promise<EvalScheduleResult>;

const resultsMtime = (logPath: string, checkpoint: string, benchmark: string) => statSync(join(scheduledEvalDir(logPath, checkpoint, benchmark), 'results.json')).mtimeMs;

describe('eval schedule: arguments', () => {
  it('intervals and benchmark lists are checked, naming the flag', () => {
    expect(parseEvery('30m')).toBe('30m');
    expect(parseEvery('02h')).toBe('2h');
    for (const bad of ['30', '0m', 'soon', '1w']) expect(() => parseEvery(bad)).toThrow(/--every: .* is not an interval/);
    expect(parseBenchmarks('gsm8k, mmlu')).toEqual(['gsm8k', 'mmlu']);
    expect(() => parseBenchmarks('gsm8k,nope')).toThrow(/--benchmarks: unknown suite nope/);
    expect(() => parseBenchmarks('gsm8k,gsm8k')).toThrow(/names a suite twice/);
    expect(() => parseBenchmarks(',')).toThrow(ConfigError);
  });

  it('the summary table of several benchmarks: one row each', () => {
    const t = benchmarkSummaryTable('m', [
      { suite: 'gsm8k', metrics: { score: 0.5, num_correct: 1, num_examples: 2, score_stderr: 0.5 }, resultsPath: '/r/gsm8k/results.json' },
      { suite: 'mmlu', metrics: { score: 0, num_correct: 0, num_examples: 3 }, resultsPath: '/r/mmlu/results.json' },
    ]);
    expect(t.split('\n').slice(2)).toEqual([
      '| benchmark |  score | ± stderr | correct | examples | results               |',
      '| --------- | -----: | -------: | ------: | -------: | --------------------- |',
      '| gsm8k     | 0.5000 |   0.5000 |       1 |        2 | /r/gsm8k/results.json |',
      '| mmlu      | 0.0000 |        – |       0 |        3 | /r/mmlu/results.json  |',
    ]);
  });
});

describe('eval schedule on the real stack', () => {
  let stack: TestStack;
  let backend: TinkerBackend;
  beforeAll(async () => {
    stack = await startTestStack();
    backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test', env: {} });
  });
  afterAll(async () => {
    await backend?.close();
    await stack?.stop();
  });

  it('a schedule fired twice evaluates each new checkpoint once per benchmark; overlapping firings too; the report draws the curves', async () => {
    const run = await FakeTrainingRun.create(stack, backend);
    const a = await run.checkpoint(2);
    const benchmarks = ['gsm8k', 'mmlu'];
    // A bad override fails when the schedule is made, not at each firing.
    expect(() => resolveEvalSchedule(run.logPath, benchmarks, '1h', { set: ['max_tokens=-1'] })).toThrow(ConfigError);
    // Made as a user makes it (the schedule's default id: evals-<run id>).
    const made = await cookbookOn(stack, ['eval', run.logPath, '--every', '1h', '--benchmarks', benchmarks.join(','), '--limit', '1', ...EVAL_SET.flatMap((kv) => ['--set', kv])]);
    expect(made.err).toBe('');
    expect(made.out).toContain(`created schedule evals-${run.workflowId}: every 1h, gsm8k, mmlu on each sampler checkpoint of ${run.workflowId}`);
    const s = resolveEvalSchedule(run.logPath, benchmarks, '1h', { limit: '1', set: EVAL_SET });
    expect((await stack.client.schedule.getHandle(s.scheduleId).describe()).action.args).toEqual([s.input]);
    await expect(createEvalSchedule(stack.client, s, stack.taskQueue)).rejects.toThrow(/already exists.*--unschedule/);
    try {
      await withWorker(stack, async () => {
        // Firing 1: checkpoint A on both benchmarks.
        const first = await firingResult(stack.client, await fire(stack.client, s.scheduleId));
        expect(first.alreadyDone).toBe(0);
        expect(first.evals.map((e) => [e.checkpoint, e.step, e.benchmark, e.outcome])).toEqual([
          [a.name, 2, 'gsm8k', 'evaluated'],
          [a.name, 2, 'mmlu', 'evaluated'],
        ]);
        const aRuns = new Map<string, string>();
        for (const b of benchmarks) {
          const file = JSON.parse(readFileSync(join(scheduledEvalDir(run.logPath, a.name, b), 'results.json'), 'utf8')) as EvalResultsFile;
          expect(file.model).toBe(a.samplerPath);
          expect(file.base_model).toBe(MODEL);
          expect(file.examples).toHaveLength(1);
          aRuns.set(b, (await stack.client.workflow.getHandle(scheduledEvalId(run.workflowId, a.name, b)).describe()).runId);
        }
        const aMtimes = benchmarks.map((b) => resultsMtime(run.logPath, a.name, b));

        // Firing 2, after a new checkpoint: only B is evaluated; A's evals are neither re-run nor rewritten.
        const b2 = await run.checkpoint(4);
        const second = await firingResult(stack.client, await fire(stack.client, s.scheduleId));
        expect(second.alreadyDone).toBe(2);
        expect(second.evals.map((e) => [e.checkpoint, e.benchmark, e.outcome])).toEqual([
          [b2.name, 'gsm8k', 'evaluated'],
          [b2.name, 'mmlu', 'evaluated'],
        ]);
        expect(benchmarks.map((b) => resultsMtime(run.logPath, a.name, b))).toEqual(aMtimes);
        for (const b of benchmarks) expect((await stack.client.workflow.getHandle(scheduledEvalId(run.workflowId, a.name, b)).describe()).runId).toBe(aRuns.get(b));

        // Two firings at once on a third checkpoint: between them each pair is evaluated exactly once.
        // (Started as the schedule starts its action: two triggers within one second would get the
        // same workflow id, the schedule's id plus the second, and the second would not start.)
        const c = await run.checkpoint(6);
        const action = (await stack.client.schedule.getHandle(s.scheduleId).describe()).action;
        const [x, y] = await Promise.all(
          // One pair per activity: the firings walk the six pairs in stretches.
          [1, 2].map(async (n) => (await stack.client.workflow.start(action.workflowType, { taskQueue: action.taskQueue, workflowId: `${s.scheduleId}-overlap-${n}`, args: [{ ...s.input, perBatch: 1 }] })).workflowId),
        );
        const both = await Promise.all([firingResult(stack.client, x), firingResult(stack.client, y)]);
        for (const r of both) {
          expect(r.alreadyDone + r.evals.length).toBe(6);
          expect(r.evals.every((e) => e.checkpoint === c.name)).toBe(true);
        }
        for (const b of benchmarks) {
          const outcomes = both.flatMap((r) => r.evals.filter((e) => e.checkpoint === c.name && e.benchmark === b).map((e) => e.outcome));
          expect(outcomes.filter((o) => o === 'evaluated')).toHaveLength(1);
          expect(outcomes.every((o) => o === 'evaluated' || o === 'by_another_firing')).toBe(true);
          expect(existsSync(join(scheduledEvalDir(run.logPath, c.name, b), 'results.json'))).toBe(true);
          // One execution of that eval's workflow id, not two.
          const history = await stack.client.workflow.getHandle(scheduledEvalId(run.workflowId, c.name, b)).fetchHistory();
          expect(history.events?.filter((e) => e.workflowExecutionStartedEventAttributes)).toHaveLength(1);
        }
        expect(readdirSync(join(run.logPath, 'evals')).sort()).toEqual([a.name, b2.name, c.name]);
      });

      // The run's report: a score curve per benchmark over the three checkpoints' steps.
      const html = await buildReportHtml([run.logPath]);
      expect(html).toContain('<h2 id="scheduled-evals">Scheduled evals</h2>');
      for (const b of benchmarks) expect(html).toContain(`data-key="scheduled_eval/${b}/score"`);
      const section = html.slice(html.indexOf('id="scheduled-evals"'));
      for (const step of [2, 4, 6]) expect(section).toContain(`<td class="num">${step}</td>`);

      // Listed, then deleted (the list is Temporal's visibility store, which follows a change after a moment).
      await waitUntil('the schedule listed', async () => (await listEvalSchedules(stack.client)).some((r) => r.scheduleId === s.scheduleId));
      expect((await listEvalSchedules(stack.client)).find((r) => r.scheduleId === s.scheduleId)).toMatchObject({ run: run.workflowId, benchmarks, every: '1h', logPath: run.logPath });
    } finally {
      await unscheduleEval(stack.client, s.scheduleId);
    }
    await expect(stack.client.schedule.getHandle(s.scheduleId).describe()).rejects.toThrow(ScheduleNotFoundError);
    await waitUntil('the schedule gone from the list', async () => !(await listEvalSchedules(stack.client)).some((r) => r.scheduleId === s.scheduleId));
    await expect(unscheduleEval(stack.client, s.scheduleId)).rejects.toThrow(/no schedule/);
  }, 240_000);

  it('an eval that fails fails its firing, naming it, and the next firing evaluates it again; the others are kept', async () => {
    const run = await FakeTrainingRun.create(stack, backend);
    const good = await run.checkpoint(1);
    // A checkpoint the engine does not have (deleted by hand, say): its eval fails at weights_info.
    new RunStore(run.logPath).writeCheckpoint({ name: '000002', batch: 2, epoch: 0, next_step: 3, sampler_path: `tinker://${run.workflowId}-gone/sampler_weights/000002` });
    const s = resolveEvalSchedule(run.logPath, ['gsm8k'], '1h', { limit: '1', set: EVAL_SET });
    const badId = scheduledEvalId(run.workflowId, '000002', 'gsm8k');
    const firing = (n: number) => stack.client.workflow.execute(EVAL_SCHEDULE_WORKFLOW, { taskQueue: stack.taskQueue, workflowId: `${s.scheduleId}-failing-${n}`, args: [s.input] });
    await withWorker(stack, async () => {
      const first = await firing(1).catch((err: unknown) => err as WorkflowFailedError);
      expect(first).toBeInstanceOf(WorkflowFailedError);
      const message = (first as WorkflowFailedError).cause?.message ?? '';
      expect(message.startsWith(`1 of 2 scheduled evals failed: ${badId}: `)).toBe(true);
      expect(message).toContain('weights_info');
      expect(existsSync(join(scheduledEvalDir(run.logPath, good.name, 'gsm8k'), 'results.json'))).toBe(true);
      const firstRun = (await stack.client.workflow.getHandle(badId).describe()).runId;
      // The next firing starts the failed eval again under its id (a new execution), and leaves the good one.
      await expect(firing(2)).rejects.toThrow(WorkflowFailedError);
      expect((await stack.client.workflow.getHandle(badId).describe()).runId).not.toBe(firstRun);
    });
  }, 120_000);

  it('`cookbook eval <model> --benchmarks a,b`: one eval per benchmark, each its own results.json, then the summary table', async () => {
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void lines.push(args.join(' ')));
    try {
      await withWorker(stack, () =>
        evalCommand([MODEL], { benchmarks: 'gsm8k,mmlu', limit: '2', set: EVAL_SET, engineUrl: stack.engine.baseUrl, taskQueue: stack.taskQueue, runsDir: join(stack.dir, 'runs'), workflowId: `multi-${process.pid}`, connect: async () => stack.client }),
      );
    } finally {
      log.mockRestore();
    }
    const out = lines.join('\n');
    for (const b of ['gsm8k', 'mmlu']) {
      const resultsPath = join(stack.dir, 'runs', `multi-${process.pid}-${b}`, 'results.json');
      const file = JSON.parse(readFileSync(resultsPath, 'utf8')) as EvalResultsFile;
      expect(file.suite).toBe(b);
      expect(out).toMatch(new RegExp(`\\| ${b} +\\| ${file.metrics.score!.toFixed(4)} \\| +${file.metrics.score_stderr!.toFixed(4)} \\| +${file.metrics.num_correct} \\| +2 \\| ${resultsPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} +\\|`));
    }
  }, 120_000);
});

// Fuller tier: the eval workflow's own kill test is in the gate (test/durability/eval-crash.test.ts);
// this one kills the worker under a schedule's firing, whose child eval then resumes.
describe.runIf(fullTier)('eval schedule under a killed worker', () => {
  let stack: TestStack;
  let backend: TinkerBackend;
  beforeAll(async () => {
    stack = await startTestStack({ own: true });
    backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test', env: {} });
  });
  afterAll(async () => {
    await backend?.close();
    await stack?.stop();
  });

  it('a worker SIGKILLed mid-eval is replaced: the chunks finished before are not scored again, the firing completes', async () => {
    const run = await FakeTrainingRun.create(stack, backend);
    const a = await run.checkpoint(1);
    const s = resolveEvalSchedule(run.logPath, ['gsm8k'], '1h', { limit: '5', set: ['max_tokens=24', 'chunk_size=1', 'concurrency=1', 'temperature=1.0', 'durability.heartbeat_timeout_s=4'] }, { scheduleId: `evals-kill-${run.workflowId}` });
    await createEvalSchedule(stack.client, s, stack.taskQueue);
    let worker = await workerProcess(stack, 'sched-worker-1');
    try {
      const firing = await fire(stack.client, s.scheduleId);
      const evalId = scheduledEvalId(run.workflowId, a.name, 'gsm8k');
      await waitUntil('2 chunks done', async () => (await stack.client.workflow.getHandle(evalId).query(progressQuery).catch(() => ({ step: 0 }))).step >= 2, 120_000, 50);
      await worker.kill();
      const blobs = join(scheduledEvalDir(run.logPath, a.name, 'gsm8k'), '.cookbook', 'store', 'eval');
      const before = new Map(readdirSync(blobs).map((f) => [f, statSync(join(blobs, f)).mtimeMs]));
      expect(before.size).toBeGreaterThanOrEqual(2);
      expect(before.size).toBeLessThan(5);
      worker = await workerProcess(stack, 'sched-worker-2');
      const result = await firingResult(stack.client, firing);
      expect(result.evals.map((e) => e.outcome)).toEqual(['evaluated']);
      for (const [f, mtime] of before) expect(statSync(join(blobs, f)).mtimeMs).toBe(mtime);
      expect(readdirSync(blobs)).toHaveLength(5);
      const history = await stack.client.workflow.getHandle(evalId).fetchHistory();
      expect(history.events?.filter((e) => e.activityTaskCompletedEventAttributes)).toHaveLength(1 + 5 + 1);
    } finally {
      await worker.stop();
      await unscheduleEval(stack.client, s.scheduleId);
    }
  }, 480_000);
});
