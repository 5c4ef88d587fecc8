// `cookbook eval --inspect` on the real stack (Temporal dev server, the engine over HTTP, the real
// tokenizer, Inspect AI's own runner in its cached venv): the shipped local task evaluated through
// the workflow, its results.json read back against Inspect's log; and (fuller tier) a worker killed
// mid-eval, after some samples are in the log, whose retry resumes that log with Inspect's
// eval_retry: no finished sample is generated or scored again, and the results equal the
// uninterrupted run's.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inspectLogs, readInspectLog, type InspectLog } from '../../src/activities/eval-inspect.js';
import { inspectEvalCommand, resolveInspectEval, startInspectEval, type ResolvedInspectEval } from '../../src/cli/eval-inspect.js';
import type { InspectResultsFile } from '../../src/cookbook/eval/inspect-config.js';
import { ensureInspectEnv } from '../../src/stack/inspect-env.mjs';
import type { EvalInspectResult } from '../../src/workflows/eval-inspect.js';
import { retriedActivities } from '../support/history.js';
import { startTestStack, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const MODEL = 'tiny-qwen3';
const TASK = `${resolve('data/eval/inspect/arithmetic.py')}@arithmetic`;
const NUM_SAMPLES = 6;
let stack: TestStack;
let counter = 0;

function inspectRun(set: string[] = []): ResolvedInspectEval {
  return resolveInspectEval(MODEL, TASK, { set: ['max_tokens=16', ...set] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-inspect-test-${++counter}` });
}

const results = (r: EvalInspectResult) => JSON.parse(readFileSync(r.resultsPath, 'utf8')) as InspectResultsFile;
/** Each sample's id → (uuid, its completion, its scores) in a log. */
const samplesOf = (log: InspectLog) => new Map((log.samples ?? []).map((s) => [String(s.id), s]));

describe('eval --inspect', () => {
  beforeAll(async () => {
    // Built here, not inside the first activity, so its first-time download is not under a test's timeout.
    await ensureInspectEnv();
    stack = await startTestStack();
  }, 600_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('runs the shipped Inspect task through `cookbook eval --inspect`; results.json is what Inspect logged', async () => {
    // The command itself: it starts the workflow, follows it and prints the table.
    const workflowId = `eval-inspect-test-${++counter}`;
    const printed: string[] = [];
    const quiet = vi.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(String(line)));
    try {
      const code = await withWorker(stack, () =>
        inspectEvalCommand(MODEL, TASK, { set: ['max_tokens=16'], workflowId, engineUrl: stack.engine.baseUrl, taskQueue: stack.taskQueue, runsDir: join(stack.dir, 'runs'), connect: async () => stack.client }),
      );
      expect(code).toBe(0);
    } finally {
      quiet.mockRestore();
    }
    const result = (await stack.client.workflow.getHandle(workflowId).result()) as EvalInspectResult;
    const r = { run: { workflowId, kind: 'eval' as const, logPath: result.logPath } };
    expect(printed.join('\n')).toContain(`results  ${result.resultsPath}`);
    expect(printed.join('\n')).toContain('| includes/accuracy |');
    expect(result.status).toBe('completed');
    const file = results(result);
    const logs = inspectLogs(r.run);
    expect(logs).toEqual([result.inspectLog]);
    const log = readInspectLog(result.inspectLog);
    expect(log.status).toBe('success');
    expect(log.eval.model).toBe(`openai-api/cookbook/${MODEL}`);
    // Metrics: Inspect's, by scorer and metric name.
    const accuracy = log.results!.scores[0]!.metrics.accuracy!.value;
    expect(file.metrics).toEqual({ 'includes/accuracy': accuracy, 'includes/stderr': log.results!.scores[0]!.metrics.stderr!.value, num_samples: NUM_SAMPLES });
    expect(result.metrics).toEqual(file.metrics);
    // Per sample: the completion and the verdict Inspect scored, and accuracy is their mean.
    const byId = samplesOf(log);
    expect(file.samples.map((s) => s.id).sort()).toEqual([...byId.keys()].sort());
    expect(byId.size).toBe(NUM_SAMPLES);
    for (const s of file.samples) {
      const logged = byId.get(String(s.id))!;
      expect(s.completion).toBe(logged.output!.completion);
      expect(s.completion.length).toBeGreaterThan(0);
      expect(s.scores.includes).toBe(logged.scores!.includes!.value);
      expect(['C', 'I']).toContain(s.scores.includes);
    }
    expect(accuracy).toBeCloseTo(file.samples.filter((s) => s.scores.includes === 'C').length / NUM_SAMPLES, 10);
    expect(file.base_model).toBe(MODEL);
    expect(readFileSync(join(result.logPath, 'results.md'), 'utf8')).toContain('| includes/accuracy |');
  }, 300_000);

  it('a task Inspect cannot load fails the eval at once, with Inspect’s reason', async () => {
    const r = resolveInspectEval(MODEL, TASK.replace(/@arithmetic$/, '@no_such_task'), {}, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-inspect-test-${++counter}` });
    const failure = await withWorker(stack, async () => (await startInspectEval(stack.client, r, stack.taskQueue)).result().then(() => undefined, (err: Error) => err));
    expect(failure).toBeDefined();
    const cause = (failure as Error & { cause?: { cause?: Error } }).cause?.cause;
    expect(cause?.message).toMatch(/Inspect task .*@no_such_task: Inspect exited with 1/);
    expect(cause?.message).toMatch(/no_such_task/);
    expect(await retriedActivities(stack.client, r.workflowId, 'evalInspectRun')).toBe(0);
  }, 120_000);

  it.runIf(fullTier)('a worker killed mid-eval resumes Inspect’s log: no finished sample runs again, and the results equal an uninterrupted run’s', async () => {
    // Longer completions, so the kill lands while samples remain; a short heartbeat timeout, so the
    // killed attempt is handed on quickly.
    const set = ['max_tokens=200', 'temperature=1.0', 'seed=3', 'durability.heartbeat_timeout_s=5'];
    const clean = inspectRun(set);
    const crashed = inspectRun(set);
    let w = await workerProcess(stack, 'inspect-1');
    try {
      const cleanResult = (await (await startInspectEval(stack.client, clean, stack.taskQueue)).result()) as EvalInspectResult;
      const handle = await startInspectEval(stack.client, crashed, stack.taskQueue);
      // Kill once two samples are in the (rewritten after each sample) log.
      const started = () => inspectLogs(crashed.run).find((f) => existsSync(f));
      await waitUntil('two samples in the Inspect log', async () => (readInspectLog(started()!).samples?.length ?? 0) >= 2, 300_000, 10);
      await w.kill();
      const killedLogFile = started()!;
      const killed = readInspectLog(killedLogFile);
      const finishedBeforeKill = samplesOf(killed);
      expect(killed.status).toBe('started');
      expect(finishedBeforeKill.size).toBeGreaterThanOrEqual(2);
      expect(finishedBeforeKill.size).toBeLessThan(NUM_SAMPLES);
      w = await workerProcess(stack, 'inspect-2');
      const result = (await handle.result()) as EvalInspectResult;
      expect(await retriedActivities(stack.client, crashed.workflowId, 'evalInspectRun')).toBeGreaterThan(0);
      expect(result.inspectLog).not.toBe(killedLogFile);
      const final = readInspectLog(result.inspectLog);
      expect(final.status).toBe('success');
      // The samples finished before the kill are the very records scored then (same uuid, same
      // score), carried into the retry's log; only the others were run (and scored) again.
      const finalSamples = samplesOf(final);
      expect(finalSamples.size).toBe(NUM_SAMPLES);
      for (const [id, before] of finishedBeforeKill) {
        expect(finalSamples.get(id)!.uuid).toBe(before.uuid);
        expect(finalSamples.get(id)!.scores).toEqual(before.scores);
      }
      const rerun = [...finalSamples.values()].filter((s) => ![...finishedBeforeKill.values()].some((b) => b.uuid === s.uuid));
      expect(rerun).toHaveLength(NUM_SAMPLES - finishedBeforeKill.size);
      // Across every log of the run, each sample was scored exactly once: no uuid twice per id.
      const uuidsPerId = new Map<string, Set<string>>();
      for (const f of readdirSync(join(crashed.run.logPath, 'inspect-logs')).filter((n) => n.endsWith('.json'))) {
        for (const s of readInspectLog(join(crashed.run.logPath, 'inspect-logs', f)).samples ?? []) {
          uuidsPerId.set(String(s.id), (uuidsPerId.get(String(s.id)) ?? new Set()).add(String(s.uuid)));
        }
      }
      expect([...uuidsPerId.values()].every((u) => u.size === 1)).toBe(true);
      // Seeded sampling: the resumed run's completions and verdicts are the uninterrupted run's.
      const strip = (f: InspectResultsFile) => ({ metrics: f.metrics, samples: f.samples });
      expect(strip(results(result))).toEqual(strip(results(cleanResult)));
    } finally {
      await w.kill();
    }
  }, 900_000);
});
