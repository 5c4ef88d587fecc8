// code_rl with its sandbox server killed mid-run and started again. The worker grades every episode
// through SANDBOX_URL on a run_code server that runs as a process of its own
// (test/support/sandbox-server-main.ts: the local sandbox, logging every program it ran to the
// end). During step 1's rollouts, after one of its verdicts was recorded and with the other requests
// waiting inside the server, the server is SIGKILLed; the worker's SandboxFusion client sees its
// connections drop and be refused, backs off and retries (it says so in the worker's log) while the
// rollout activity keeps heartbeating; a new server comes up on the same port and answers. The run
// then equals an uninterrupted one (metrics, checkpoints, rollout summaries, weights), no rollout
// attempt failed, every recorded verdict is a real run's (no error recorded as a result), and the
// servers ran each program once: the verdicts recorded before the kill were not run again.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnService, startWorkerProcess, type Service } from '../../src/cli/services.js';
import { startRun } from '../../src/cli/train.js';
import { LocalSandbox } from '../../src/cookbook/sandbox/index.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { onFreePort } from '../support/free-port.js';
import { retriedActivities } from '../support/history.js';
import { expectSameRun, metricsOf } from '../support/runs.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'rl_code_small.json');
const SERVER_MAIN = join(import.meta.dirname, '..', 'support', 'sandbox-server-main.ts');
const unavailable = await new LocalSandbox().available().then(() => null, (e: Error) => e);

/** The side effects a run recorded, by rollout position (step_group_attempt). */
function recordsOf(logPath: string): Map<string, string[]> {
  const root = join(logPath, '.cookbook', 'store', 'side_effects');
  const out = new Map<string, string[]>();
  if (!existsSync(root)) return out;
  for (const position of readdirSync(root)) out.set(position, readdirSync(join(root, position)).filter((f) => f.endsWith('.json') && !f.startsWith('.')).sort());
  return out;
}
const count = (records: Map<string, string[]>, step?: number) => [...records].filter(([p]) => step === undefined || p.startsWith(`${step}_`)).reduce((n, [, f]) => n + f.length, 0);

interface ServerStatus {
  executed: number;
  running: number;
  held: number;
}

describe.runIf(!unavailable)('code RL: the sandbox server killed mid-run', { timeout: 900_000 }, () => {
  let stack: TestStack;
  let port: number;
  let dir: string;
  const servers: Service[] = [];
  beforeAll(async () => {
    stack = await startTestStack();
    dir = join(stack.dir, `sandbox-kill-${process.pid}`);
    mkdirSync(dir, { recursive: true });
  });
  afterAll(async () => {
    await Promise.all([...servers.map((s) => s.kill().catch(() => {})), stack?.stop()]);
  });

  /**
   * A run_code server process on the test's port (the first one chooses it); its completed runs go
   * to `<name>.runs.jsonl`. Later ones come up on the same port, which the worker's SANDBOX_URL names.
   */
  async function sandboxServer(name: string, holdAfter?: number, on = port): Promise<Service> {
    const logFile = join(dir, `${name}.log`);
    const server = await spawnService({
      name: `sandbox ${name}`,
      command: process.execPath,
      args: ['--import', 'tsx', SERVER_MAIN, '--port', String(on), '--run-log', join(dir, `${name}.runs.jsonl`), '--status', join(dir, `${name}.status.json`), ...(holdAfter === undefined ? [] : ['--hold-after', String(holdAfter)])],
      logFile,
      ports: [on],
      ready: async () => existsSync(logFile) && readFileSync(logFile, 'utf8').includes('sandbox listening'),
    });
    servers.push(server);
    return server;
  }
  const runsOf = (name: string) => {
    const file = join(dir, `${name}.runs.jsonl`);
    return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).length : 0;
  };
  const statusOf = (name: string): ServerStatus => JSON.parse(readFileSync(join(dir, `${name}.status.json`), 'utf8'));

  it('the run ends as an uninterrupted one; the client waited out the outage; no recorded verdict was run again', async () => {
    // The first server chooses the port before the worker is told it.
    const first = await onFreePort({}, ({ port: free }: { port: number }) => sandboxServer('clean', undefined, free));
    port = first.opts.port;
    const workerLog = join(dir, 'worker.log');
    const worker = await startWorkerProcess({
      temporalAddress: stack.temporalAddress,
      tinkerBaseUrl: stack.engine.baseUrl,
      taskQueue: stack.taskQueue,
      logFile: workerLog,
      env: { TINKER_API_KEY: 'tml-test', SANDBOX_URL: `http://127.0.0.1:${port}/run_code` },
    });
    try {
      // The uninterrupted run.
      const clean = testRun(stack, FIXTURE, [], 'rl');
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      expect(cleanResult.status).toBe('completed');
      await first.service.stop();
      const cleanRecords = recordsOf(clean.run.logPath);
      expect(stepRows(metricsOf(clean.run.logPath)).map((r) => r['env/all/total_episodes'])).toEqual([4, 4]);
      expect(count(cleanRecords)).toBe(8);
      expect(runsOf('clean')).toBe(8);

      // The interrupted one: step 0's runs and one of step 1's go through, the rest wait in the server.
      const crashed = testRun(stack, FIXTURE, [], 'rl');
      await sandboxServer('before-kill', count(cleanRecords, 0) + 1);
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await waitUntil(
        "step 1's first verdict recorded, its other requests waiting in the server",
        async () => {
          const s = statusOf('before-kill');
          return s.held > 0 && s.running === 0 && count(recordsOf(crashed.run.logPath)) === s.executed;
        },
        300_000,
        20,
      );
      await untilActivityRunning(handle, 'rlRolloutGroup');
      expect(count(recordsOf(crashed.run.logPath), 1)).toBe(1);
      const logBefore = readFileSync(workerLog, 'utf8').length;
      await servers.at(-1)!.kill();
      // The client backs off and retries against the dead port (it says so), the rollout waiting on it.
      await waitUntil('the client retrying', async () => /\[cookbook\] sandbox http:\/\/127\.0\.0\.1:\d+\/run_code unreachable \((ECONNREFUSED|UND_ERR_SOCKET|ECONNRESET)\)/.test(readFileSync(workerLog, 'utf8').slice(logBefore)), 60_000, 50);
      await new Promise((resolve) => setTimeout(resolve, 3_000)); // a few more refused tries: the outage lasts
      await sandboxServer('after-kill');
      const crashedResult = (await handle.result()) as RunResult;
      expect(crashedResult.status).toBe('completed');

      // No rollout attempt failed: the outage cost a wait, not a retry of the rollout, and no error was recorded as a verdict.
      expect(await retriedActivities(stack.client, crashed.workflowId, 'rlRolloutGroup')).toBe(0);
      const crashedRecords = recordsOf(crashed.run.logPath);
      expect(crashedRecords).toEqual(cleanRecords);
      for (const [position, files] of crashedRecords) {
        for (const file of files) {
          const record = JSON.parse(readFileSync(join(crashed.run.logPath, '.cookbook', 'store', 'side_effects', position, file), 'utf8'));
          const [, details] = record.value as [boolean, Record<string, unknown>];
          expect(details, `${position}/${file}`).not.toHaveProperty('error');
          expect(['Success', 'Failed'], `${position}/${file}`).toContain(details.status);
        }
      }
      // Each program ran once across the two servers: what ran before the kill was recorded and not run again.
      expect(runsOf('before-kill')).toBe(count(cleanRecords, 0) + 1);
      expect(runsOf('before-kill') + runsOf('after-kill')).toBe(count(crashedRecords));

      await expectSameRun(
        { logPath: crashed.run.logPath, samplerPath: crashedResult.finalCheckpoint!.samplerPath!, baseUrl: stack.engine.baseUrl },
        { logPath: clean.run.logPath, samplerPath: cleanResult.finalCheckpoint!.samplerPath!, baseUrl: stack.engine.baseUrl },
      );
    } finally {
      await worker.stop();
    }
  });
});
