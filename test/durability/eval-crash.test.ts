// An evaluation survives its worker and its engine: a worker process is SIGKILLed while chunks are
// being sampled, a new worker takes over, the chunks finished before the kill are not sampled again
// (their claim-check blobs are never rewritten), and results.json equals an uninterrupted run's;
// an engine restart mid-eval costs the chunk in flight a retry and changes nothing in the results.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEval, startEval } from '../../src/cli/eval.js';
import type { EvalResultsFile } from '../../src/cookbook/eval/results.js';
import type { EvalWorkflowResult } from '../../src/workflows/eval.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import { startTestStack, waitUntil, workerProcess, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

// One example per chunk, one chunk at a time: the kill lands between finished and unstarted chunks.
const SET = ['max_tokens=24', 'chunk_size=1', 'concurrency=1', 'temperature=1.0', 'durability.heartbeat_timeout_s=4'];

const blobDir = (logPath: string) => join(logPath, '.cookbook', 'store', 'eval');
function blobStats(logPath: string): Map<string, { mtimeMs: number; text: string }> {
  const dir = blobDir(logPath);
  if (!existsSync(dir)) return new Map();
  return new Map(readdirSync(dir).map((f) => [f, { mtimeMs: statSync(join(dir, f)).mtimeMs, text: readFileSync(join(dir, f), 'utf8') }]));
}
const resultsOf = (r: EvalWorkflowResult) => {
  const { examples, metrics } = JSON.parse(readFileSync(r.resultsPath, 'utf8')) as EvalResultsFile;
  return { examples, metrics };
};

describe('eval workflow under a crash (worker or engine)', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ own: true });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('a SIGKILLed worker is replaced, finished chunks are kept, and the results equal an uninterrupted eval', async () => {
    const runsDir = join(stack.dir, 'runs');
    const clean = resolveEval('tiny-qwen3', 'gsm8k', { set: SET }, { runsDir, workflowId: 'eval-clean' });
    const crashed = resolveEval('tiny-qwen3', 'gsm8k', { set: SET }, { runsDir, workflowId: 'eval-crashed' });

    let worker = await workerProcess(stack, 'worker-clean');
    const cleanResult = (await (await startEval(stack.client, clean, stack.taskQueue)).result()) as EvalWorkflowResult;

    const handle = await startEval(stack.client, crashed, stack.taskQueue);
    await waitUntil('2 chunks done', async () => (await handle.query(progressQuery)).step >= 2, 120_000, 50);
    await worker.kill();
    // (No queries now: a query needs a worker.) On disk: at least 2 chunks done, not all of them.
    const beforeRestart = blobStats(crashed.run.logPath);
    expect(beforeRestart.size).toBeGreaterThanOrEqual(2);
    expect(beforeRestart.size).toBeLessThan(cleanResult.numExamples);

    worker = await workerProcess(stack, 'worker-2');
    const crashedResult = (await handle.result()) as EvalWorkflowResult;
    await worker.stop();

    expect(crashedResult.status).toBe('completed');
    expect(resultsOf(crashedResult)).toEqual(resultsOf(cleanResult));
    // Chunks finished before the kill were not sampled again: their blobs are untouched.
    const after = blobStats(crashed.run.logPath);
    expect(after.size).toBe(crashedResult.numExamples);
    for (const [file, stat] of beforeRestart) expect(after.get(file)).toEqual(stat);
    // Every chunk completed exactly once in the workflow's history.
    const history = await handle.fetchHistory();
    const completed = (history.events ?? []).filter((e) => e.activityTaskCompletedEventAttributes).length;
    expect(completed).toBe(1 + crashedResult.numExamples + 1); // prepare, one per chunk, finish
  }, 480_000);

  // Fuller tier: the gate kills a worker mid-eval above, eval.test.ts pins seeds per (suite, example),
  // and pass@k's estimator is unit-tested (test/cookbook/eval/pass-at-k.test.ts).
  if (fullTier) it('pass@k (3 samples per example): a SIGKILLed worker mid-eval gives the same samples, pass@k table and results as an uninterrupted eval', async () => {
    const runsDir = join(stack.dir, 'runs');
    const set = [...SET, 'limit=4', 'num_samples=3', 'pass_at_k=[1,2,3]'];
    const clean = resolveEval('tiny-qwen3', 'gsm8k', { set }, { runsDir, workflowId: 'eval-pass-clean' });
    const crashed = resolveEval('tiny-qwen3', 'gsm8k', { set }, { runsDir, workflowId: 'eval-pass-crashed' });

    let worker = await workerProcess(stack, 'worker-pass-clean');
    const cleanResult = (await (await startEval(stack.client, clean, stack.taskQueue)).result()) as EvalWorkflowResult;
    const handle = await startEval(stack.client, crashed, stack.taskQueue);
    await waitUntil('1 chunk done', async () => (await handle.query(progressQuery)).step >= 1, 120_000, 50);
    await worker.kill();
    const beforeRestart = blobStats(crashed.run.logPath);
    expect(beforeRestart.size).toBeLessThan(4);
    worker = await workerProcess(stack, 'worker-pass-2');
    const crashedResult = (await handle.result()) as EvalWorkflowResult;
    await worker.stop();

    expect(resultsOf(crashedResult)).toEqual(resultsOf(cleanResult));
    expect(readFileSync(join(crashed.run.logPath, 'results.md'), 'utf8')).toBe(readFileSync(join(clean.run.logPath, 'results.md'), 'utf8'));
    for (const [file, stat] of beforeRestart) expect(blobStats(crashed.run.logPath).get(file)).toEqual(stat);
    const { examples, metrics } = resultsOf(cleanResult);
    expect(examples).toHaveLength(4);
    for (const e of examples) {
      expect(e.samples).toHaveLength(3);
      expect(e.samples![0]!.response).toBe(e.response);
    }
    // Each sample has its own seed: at temperature 1 the three responses of an example differ.
    expect(examples.some((e) => new Set(e.samples!.map((s) => s.response)).size > 1)).toBe(true);
    expect(Object.keys(metrics)).toEqual(expect.arrayContaining(['pass@1', 'pass@2', 'pass@3', 'num_samples']));
    expect(metrics.num_samples).toBe(12);
    expect(metrics['pass@1']).toBeCloseTo(metrics.score!, 12);
    expect(metrics['pass@1']!).toBeLessThanOrEqual(metrics['pass@2']!);
    expect(metrics['pass@2']!).toBeLessThanOrEqual(metrics['pass@3']!);
    expect(cleanResult.table).toMatch(/\| pass@3 +\| +\d\.\d{4} \|/);
  }, 480_000);

  it('an engine restart mid-eval: the chunk in flight is sampled again on the restarted engine, and the results equal an uninterrupted eval', async () => {
    const runsDir = join(stack.dir, 'runs');
    const clean = resolveEval('tiny-qwen3', 'mmlu', { set: SET }, { runsDir, workflowId: 'eval-clean-engine' });
    const crashed = resolveEval('tiny-qwen3', 'mmlu', { set: SET }, { runsDir, workflowId: 'eval-crashed-engine' });
    const worker = await workerProcess(stack, 'worker-engine-test');
    try {
      const cleanResult = (await (await startEval(stack.client, clean, stack.taskQueue)).result()) as EvalWorkflowResult;
      const handle = await startEval(stack.client, crashed, stack.taskQueue);
      await waitUntil('1 chunk done', async () => (await handle.query(progressQuery)).step >= 1, 120_000, 50);
      await stack.restartEngine();
      expect(blobStats(crashed.run.logPath).size).toBeLessThan(cleanResult.numExamples); // it landed mid-eval
      const crashedResult = (await handle.result()) as EvalWorkflowResult;
      expect(crashedResult.status).toBe('completed');
      expect(resultsOf(crashedResult)).toEqual(resultsOf(cleanResult));
    } finally {
      await worker.stop();
    }
  }, 480_000);
});
