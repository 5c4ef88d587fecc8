// Terminal-task RL with its worker killed mid-episode. A model warmed up on the shipped tool-call
// transcripts (data/terminal_sft.jsonl) works in each episode's sandbox; every
// sandbox operation (the agent's commands, the grader's uploads, test.sh, its reads) is recorded
// with the files it left, and every one that really ran is logged by the worker that ran it
// (COOKBOOK_SANDBOX_EXEC_LOG, naming the record it makes). The worker is SIGKILLed once some of
// the run's operations are recorded; a new worker takes over. Then:
// - the run equals an uninterrupted one (metrics, checkpoints, rollout summaries, final weights);
// - no operation recorded before the kill ran again: each ran exactly once, and the executions
//   number exactly the records plus those the killed worker ran without recording them (the ones
//   in flight when it died — their files were discarded with it, so running them again is right).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerProcess, type Service } from '../../src/cli/services.js';
import { startRun } from '../../src/cli/train.js';
import { episodeSandboxAvailable } from '../../src/cookbook/sandbox/episode.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { retriedActivities } from '../support/history.js';
import { expectSameRun } from '../support/runs.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, withWorker, type TestStack } from '../support/stack.js';

const WARMUP = join(import.meta.dirname, '..', 'fixtures', 'sl_terminal_warmup.json');
const RL = join(import.meta.dirname, '..', 'fixtures', 'rl_terminal_small.json');
const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);

/** Every record a run made, as `side_effects/<position>/<key>.json` (what the exec log names). */
function recordsOf(logPath: string): string[] {
  const root = join(logPath, '.cookbook', 'store', 'side_effects');
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((position) => readdirSync(join(root, position)).filter((f) => f.endsWith('.json') && !f.startsWith('.')).map((f) => `side_effects/${position}/${f}`)).sort();
}

/** The records each logged execution was to make, in order. */
function executionsIn(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { record: string }).record);
}

describe.skipIf(unavailable)('terminal-task RL: the worker killed mid-episode', { timeout: 1_800_000 }, () => {
  let stack: TestStack;
  let warmState: string;
  const workers: Service[] = [];
  beforeAll(async () => {
    stack = await startTestStack();
    const warm = testRun(stack, WARMUP, [], 'sl');
    const result = (await withWorker(stack, async () => (await startRun(stack.client, warm, stack.taskQueue)).result())) as RunResult;
    warmState = result.finalCheckpoint!.statePath;
  }, 1_200_000);
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill().catch(() => {})));
    await stack?.stop();
  });

  const worker = (name: string, execLog: string): Promise<Service> =>
    startWorkerProcess({
      temporalAddress: stack.temporalAddress,
      tinkerBaseUrl: stack.engine.baseUrl,
      taskQueue: stack.taskQueue,
      logFile: join(stack.dir, `${name}.log`),
      env: { TINKER_API_KEY: 'tml-test', COOKBOOK_SANDBOX_EXEC_LOG: execLog },
    }).then((w) => (workers.push(w), w));

  it('ends as an uninterrupted run; nothing recorded ran again; executions = records + those cut off unrecorded', async () => {
    const cleanLog = join(stack.dir, 'terminal-clean.exec.jsonl');
    const crashLog = join(stack.dir, 'terminal-crash.exec.jsonl');

    const clean = testRun(stack, RL, [`load_checkpoint_path=${warmState}`], 'rl');
    let w = await worker('terminal-clean', cleanLog);
    const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
    expect(cleanResult.status).toBe('completed');
    await w.stop();
    const cleanRecords = recordsOf(clean.run.logPath);
    // What ran: the grader's operations of every episode that ended (uploads, test.sh, the reward
    // reads) and the commands of the model's calls that parsed (the tiny model, briefly warmed up,
    // writes few). An uninterrupted run ran each exactly once.
    expect(cleanRecords.length).toBeGreaterThan(0);
    expect(executionsIn(cleanLog).sort()).toEqual(cleanRecords);

    const crashed = testRun(stack, RL, [`load_checkpoint_path=${warmState}`], 'rl');
    w = await worker('terminal-crash-1', crashLog);
    const handle = await startRun(stack.client, crashed, stack.taskQueue);
    const half = Math.max(1, Math.floor(cleanRecords.length / 2));
    await waitUntil(`${half} of the run's ${cleanRecords.length} sandbox operations recorded`, async () => recordsOf(crashed.run.logPath).length >= half, 600_000, 10);
    await untilActivityRunning(handle, 'rlRolloutGroup');
    await w.kill();
    const recordedAtKill = new Set(recordsOf(crashed.run.logPath));
    const ranAtKill = executionsIn(crashLog);
    const ranUnrecorded = ranAtKill.filter((r) => !recordedAtKill.has(r));
    expect(recordedAtKill.size).toBeLessThan(cleanRecords.length);

    w = await worker('terminal-crash-2', crashLog);
    const crashedResult = (await handle.result()) as RunResult;
    expect(crashedResult.status).toBe('completed');
    expect(await retriedActivities(stack.client, crashed.workflowId, 'rlRolloutGroup')).toBeGreaterThan(0);

    const crashedRecords = recordsOf(crashed.run.logPath);
    expect(crashedRecords).toEqual(cleanRecords);
    const ran = executionsIn(crashLog);
    // Each operation recorded before the kill ran once: the new worker answered it from its record.
    for (const record of recordedAtKill) expect(ran.filter((r) => r === record), record).toHaveLength(1);
    expect(ran.length).toBe(crashedRecords.length + ranUnrecorded.length);

    await expectSameRun(
      { logPath: crashed.run.logPath, samplerPath: crashedResult.finalCheckpoint!.samplerPath!, baseUrl: stack.engine.baseUrl },
      { logPath: clean.run.logPath, samplerPath: cleanResult.finalCheckpoint!.samplerPath!, baseUrl: stack.engine.baseUrl },
    );
  });
});
