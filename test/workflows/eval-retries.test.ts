// An eval whose activity fails retryably every time ends as a failed workflow after `max_attempts`
// attempts, naming the activity and its last error; one that fails once recovers on its retry, and
// what it records once (a judge's reply) is recorded once. On the real stack (Temporal dev server,
// the engine over HTTP, tiny-qwen3 with its real tokenizer), for both eval workflows:
// - a suite's chunks: arena_hard judged by an OpenAI-compatible endpoint that answers HTTP 500
//   (always, or to its first request only; then it rates the answer);
// - the Inspect bridge: a task whose solver fails its first N solves (test/fixtures/inspect/flaky.py).
import { createServer, type Server } from 'node:http';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ActivityFailure, WorkflowFailedError, type Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEval, startEval } from '../../src/cli/eval.js';
import { resolveInspectEval, startInspectEval } from '../../src/cli/eval-inspect.js';
import { evalFailure } from '../../src/cli/eval-start.js';
import { DEFAULT_EVAL_MAX_ATTEMPTS } from '../../src/cookbook/eval/max-attempts.js';
import type { EvalResultsFile } from '../../src/cookbook/eval/results.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { ensureInspectEnv } from '../../src/stack/inspect-env.mjs';
import type { EvalWorkflowResult } from '../../src/workflows/eval.js';
import type { EvalInspectResult } from '../../src/workflows/eval-inspect.js';
import { startTestStack, withWorker, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const MODEL = 'tiny-qwen3';
const FLAKY_TASK = `${resolve('test/fixtures/inspect/flaky.py')}@flaky`;
const JUDGE_REPLY = 'The answer is helpful. Rating: [[8]]';
let stack: TestStack;
let counter = 0;

/** An OpenAI-compatible judge that answers HTTP 500 to its first `failures` requests, then rates. */
async function judgeServer(failures: number): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let n = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      n++;
      if (n <= failures) {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `judge down (request ${n})` } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: JUDGE_REPLY } }] }));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/v1`, requests: () => n, close: () => new Promise((ok) => server.close(() => ok())) };
}

/** Every attempt of each activity type that ran, from the history: the last attempt's number per scheduled activity. */
async function attempts(client: Client, workflowId: string, type: string): Promise<number[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const types = new Map<string, string>();
  const out: number[] = [];
  for (const e of history.events ?? []) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) types.set(String(e.eventId), scheduled.activityType?.name ?? '');
    const started = e.activityTaskStartedEventAttributes;
    if (started && types.get(String(started.scheduledEventId)) === type) out.push(started.attempt ?? 1);
  }
  return out;
}

const failureOf = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => err);

describe('eval activities retry a bounded number of times', () => {
  beforeAll(async () => {
    await ensureInspectEnv();
    stack = await startTestStack();
  }, 600_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('defaults to 10 attempts, settable per eval', () => {
    const runsDir = join(stack.dir, 'runs');
    expect(DEFAULT_EVAL_MAX_ATTEMPTS).toBe(10);
    expect(resolveEval(MODEL, 'gsm8k', {}, { runsDir, workflowId: `eval-retries-${++counter}` }).config.max_attempts).toBe(10);
    expect(resolveEval(MODEL, 'gsm8k', { set: ['max_attempts=3'] }, { runsDir, workflowId: `eval-retries-${++counter}` }).config.max_attempts).toBe(3);
    expect(() => resolveEval(MODEL, 'gsm8k', { set: ['max_attempts=0'] }, { runsDir, workflowId: `eval-retries-${++counter}` })).toThrow(/max_attempts/);
    expect(resolveInspectEval(MODEL, FLAKY_TASK, { set: ['max_attempts=2'] }, { runsDir, workflowId: `eval-retries-${++counter}` }).config.max_attempts).toBe(2);
  });

  it('a judge that always fails: the eval fails after max_attempts chunk attempts, the judge’s error its cause, nothing recorded', async () => {
    const judge = await judgeServer(Number.POSITIVE_INFINITY);
    try {
      const r = resolveEval(MODEL, 'arena_hard', { limit: '1', set: ['max_tokens=8', 'max_attempts=2', 'judge.api=openai', `judge.base_url=${judge.url}`, `judge.model=${MODEL}`] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-retries-${++counter}` });
      const err = await withWorker(stack, async () => failureOf((await startEval(stack.client, r, stack.taskQueue)).result()));
      expect(err).toBeInstanceOf(WorkflowFailedError);
      const activity = (err as WorkflowFailedError).cause as ActivityFailure;
      expect(activity).toBeInstanceOf(ActivityFailure);
      expect([activity.activityType, activity.retryState]).toEqual(['evalChunk', 'MAXIMUM_ATTEMPTS_REACHED']);
      expect(activity.cause?.message).toMatch(/judge http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: HTTP 500: .*judge down \(request 2\)/);
      expect(await attempts(stack.client, r.workflowId, 'evalChunk')).toEqual([2]);
      expect(judge.requests()).toBe(2);
      expect(new RunStore(r.run.logPath).hasBlob('side_effects/eval_0_0/judge.json')).toBe(false);
      // What `cookbook eval` prints for it.
      expect((evalFailure(r.workflowId, err, 2) as Error).message).toMatch(new RegExp(`^eval ${r.workflowId} failed: evalChunk \\(gave up after 2 attempts\\): arena_hard judge .*HTTP 500`));
    } finally {
      await judge.close();
    }
  }, 120_000);

  it('a judge that fails once: the chunk’s retry finishes the eval, the judge’s reply recorded once', async () => {
    const judge = await judgeServer(1);
    try {
      const r = resolveEval(MODEL, 'arena_hard', { limit: '1', set: ['max_tokens=8', 'judge.api=openai', `judge.base_url=${judge.url}`, `judge.model=${MODEL}`] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-retries-${++counter}` });
      const result = await withWorker(stack, async () => (await (await startEval(stack.client, r, stack.taskQueue)).result()) as EvalWorkflowResult);
      expect(result.status).toBe('completed');
      expect(await attempts(stack.client, r.workflowId, 'evalChunk')).toEqual([2]);
      expect(judge.requests()).toBe(2);
      const record = JSON.parse(new RunStore(result.logPath).readBlob('side_effects/eval_0_0/judge.json').toString('utf8')) as { value: string };
      expect(record.value).toBe(JUDGE_REPLY);
      const file = JSON.parse(readFileSync(result.resultsPath, 'utf8')) as EvalResultsFile;
      expect(file.examples[0]!.correct).toBe(true); // rated 8: a win
      expect(result.metrics.win_rate).toBe(1);
    } finally {
      await judge.close();
    }
  }, 120_000);

  it('an Inspect task that always fails: the eval fails after max_attempts runs of Inspect, its error the cause', async () => {
    const state = join(stack.dir, `flaky-always-${++counter}`);
    mkdirSync(state, { recursive: true });
    const r = resolveInspectEval(MODEL, FLAKY_TASK, { set: ['max_tokens=8', 'max_attempts=2', `task_args.state_dir=${state}`, 'task_args.failures=1000'] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-retries-${counter}` });
    const err = await withWorker(stack, async () => failureOf((await startInspectEval(stack.client, r, stack.taskQueue)).result()));
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const activity = (err as WorkflowFailedError).cause as ActivityFailure;
    expect([activity.activityType, activity.retryState]).toEqual(['evalInspectRun', 'MAXIMUM_ATTEMPTS_REACHED']);
    expect(activity.cause?.message).toMatch(/Inspect ended with status error: .*flaky solver: failure 2 of 1000/);
    expect(await attempts(stack.client, r.workflowId, 'evalInspectRun')).toEqual([2]);
    expect(readFileSync(join(state, 'failures'), 'utf8')).toBe('2');
    expect(existsSync(join(r.run.logPath, 'results.json'))).toBe(false);
  }, 180_000);

  // Fuller tier (two more Inspect runs, ~13 s); the gate keeps the always-failing case.
  it.runIf(fullTier)('an Inspect task that fails once: the retry resumes its log and the eval completes', async () => {
    const state = join(stack.dir, `flaky-once-${++counter}`);
    mkdirSync(state, { recursive: true });
    const r = resolveInspectEval(MODEL, FLAKY_TASK, { set: ['max_tokens=8', `task_args.state_dir=${state}`, 'task_args.failures=1'] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-retries-${counter}` });
    const result = await withWorker(stack, async () => (await (await startInspectEval(stack.client, r, stack.taskQueue)).result()) as EvalInspectResult);
    expect(result.status).toBe('completed');
    expect(await attempts(stack.client, r.workflowId, 'evalInspectRun')).toEqual([2]);
    expect(result.numSamples).toBe(1);
    expect(result.metrics.num_samples).toBe(1);
  }, 180_000);
});
