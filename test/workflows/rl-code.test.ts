// code_rl on the real stack: every episode's answer is graded by running it in the sandbox (the
// local sandbox behind SandboxFusion's run_code API, in this process, which the worker reaches
// through SANDBOX_URL), and a worker killed in the middle of step 1's rollouts is replaced with the
// run ending as an uninterrupted one does — while every sandbox run happened once: the retried
// rollout replays the verdicts recorded before the kill instead of running that code again.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retriedActivities } from '../support/history.js';
import { startWorkerProcess, type Service } from '../../src/cli/services.js';
import { startRun } from '../../src/cli/train.js';
import { LocalSandbox, startSandboxServer, type RunCodeRequest, type RunCodeResponse, type SandboxServer } from '../../src/cookbook/sandbox/index.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { expectSameRun, metricsOf } from '../support/runs.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'rl_code_small.json');
const unavailable = await new LocalSandbox().available().then(() => null, (e: Error) => e);

/**
 * The real local sandbox, counting the programs it ran. Past `holdAfter` runs, requests wait unrun
 * until released: the test kills the worker while none runs, so the kill cannot fall between a run
 * and its record (the one window where a side effect repeats, as in any at-least-once system).
 */
class GatedSandbox extends LocalSandbox {
  executed = 0;
  running = 0;
  holdAfter: number | null = null;
  private held: Array<(run: boolean) => void> = [];
  get waiting(): number {
    return this.held.length;
  }
  override async runCode(request: RunCodeRequest): Promise<RunCodeResponse> {
    if (this.holdAfter !== null && this.executed + this.running >= this.holdAfter) {
      if (!(await new Promise<boolean>((resolve) => this.held.push(resolve)))) {
        return { status: 'SandboxError', message: 'not run: its worker was killed', compile_result: null, run_result: null, files: {} };
      }
    }
    this.running++;
    try {
      return await super.runCode(request);
    } finally {
      this.running--;
      this.executed++;
    }
  }
  /** Lets requests through again; those waiting run (true) or are answered unrun (false). */
  release(run: boolean): void {
    this.holdAfter = null;
    for (const resolve of this.held.splice(0)) resolve(run);
  }
}

/** The side effects a run recorded, by rollout position (step_group_attempt). */
function recordsOf(logPath: string): Map<string, string[]> {
  const root = join(logPath, '.cookbook', 'store', 'side_effects');
  const out = new Map<string, string[]>();
  if (!existsSync(root)) return out;
  for (const position of readdirSync(root)) out.set(position, readdirSync(join(root, position)).filter((f) => f.endsWith('.json') && !f.startsWith('.')).sort());
  return out;
}
const count = (records: Map<string, string[]>, step?: number) => [...records].filter(([p]) => step === undefined || p.startsWith(`${step}_`)).reduce((n, [, f]) => n + f.length, 0);

describe.runIf(!unavailable)('code RL', { timeout: 900_000 }, () => {
  let stack: TestStack;
  let sandbox: GatedSandbox;
  let server: SandboxServer;
  beforeAll(async () => {
    [stack, server] = await Promise.all([startTestStack(), startSandboxServer({ sandbox: (sandbox = new GatedSandbox()) })]);
  });
  afterAll(async () => {
    sandbox?.release(false);
    await Promise.all([stack?.stop(), server?.close()]);
  });

  const worker = (name: string): Promise<Service> =>
    startWorkerProcess({
      temporalAddress: stack.temporalAddress,
      tinkerBaseUrl: stack.engine.baseUrl,
      taskQueue: stack.taskQueue,
      logFile: join(stack.dir, `${name}.log`),
      env: { TINKER_API_KEY: 'tml-test', SANDBOX_URL: server.url },
    });


  it('grades every episode in the sandbox; a worker killed mid-rollout is replaced, the run equals an uninterrupted one and no code ran twice', async () => {
    const clean = testRun(stack, FIXTURE, [], 'rl');
    const crashed = testRun(stack, FIXTURE, [], 'rl');
    let w = await worker('code-rl-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      expect(cleanResult.status).toBe('completed');
      const cleanRuns = sandbox.executed;
      const cleanRecords = recordsOf(clean.run.logPath);
      // One sandbox run per episode (2 steps × 2 problems × 2 samples), each recorded once.
      const rows = stepRows(metricsOf(clean.run.logPath));
      expect(rows.map((r) => r['env/all/total_episodes'])).toEqual([4, 4]);
      expect(count(cleanRecords)).toBe(8);
      expect(cleanRuns).toBe(8);
      // The reference's metrics: a random model's cut answers, graded (grade_any_answer), have no code block and pass nothing.
      for (const row of rows) {
        expect([row['env/all/format'], row['env/all/correct'], row['env/all/stop/max_tokens']]).toEqual([0, 0, 1]);
        expect(row['env/all/reward/total']).toBeCloseTo(-0.1, 12);
      }

      // The crashed run: step 0, then one of step 1's sandbox runs go through; step 1's others wait.
      sandbox.holdAfter = cleanRuns + count(cleanRecords, 0) + 1;
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await waitUntil(
        "step 1's first verdict recorded, the others waiting",
        async () => sandbox.waiting > 0 && sandbox.running === 0 && count(recordsOf(crashed.run.logPath)) === sandbox.executed - cleanRuns,
        300_000,
        20,
      );
      await untilActivityRunning(handle, 'rlRolloutGroup');
      const recordedBeforeKill = count(recordsOf(crashed.run.logPath), 1);
      expect(recordedBeforeKill).toBe(1);
      await w.kill();
      sandbox.release(false); // the dead worker's waiting requests: never run
      w = await worker('code-rl-2');
      const crashedResult = (await handle.result()) as RunResult;
      expect(crashedResult.status).toBe('completed');
      expect(await retriedActivities(stack.client, crashed.workflowId, 'rlRolloutGroup')).toBeGreaterThan(0);

      // Every sandbox run of the crashed run has its record, at the positions the clean run recorded.
      const crashedRecords = recordsOf(crashed.run.logPath);
      expect(crashedRecords).toEqual(cleanRecords);
      expect(sandbox.executed - cleanRuns).toBe(count(crashedRecords));

      await expectSameRun(
        { logPath: crashed.run.logPath, samplerPath: crashedResult.finalCheckpoint!.samplerPath!, baseUrl: stack.engine.baseUrl },
        { logPath: clean.run.logPath, samplerPath: cleanResult.finalCheckpoint!.samplerPath!, baseUrl: stack.engine.baseUrl },
      );
    } finally {
      await w.stop();
    }
  });
});
