// Exactly-once steps on SkyRL-tx 0.3.0, which neither orders nor deduplicates by seq_id (fuller
// tier; docs/faults.md, "Servers that ignore seq_id"): an SL run whose worker is SIGKILLed mid-step
// three times equals an uninterrupted run for as far as two uninterrupted runs on that server agree
// with each other (its JAX training on CPU is not bitwise reproducible from run to run), and its
// database shows each step's forward_backward and optim_step reaching the model that keeps it once.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerProcess, type Service } from '../../src/cli/services.js';
import { startRun, type ResolvedRun } from '../../src/cli/train.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { startPeer, type PeerServer } from '../support/peer-servers.js';
import { metricsOf } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, untilActivityRunning, waitUntil, type TestStack } from '../support/stack.js';
import { lineageProblems, type TrainingRequest } from '../support/training-requests.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'sl_small.json');

let stack: TestStack;
let peer: PeerServer;
beforeAll(async () => {
  [stack, peer] = await Promise.all([startTestStack(), startPeer('skyrl-tx')]);
}, 1_800_000);
afterAll(async () => {
  await peer?.stop();
  await stack?.stop();
});

let workers = 0;
const worker = (): Promise<Service> =>
  startWorkerProcess({
    temporalAddress: stack.temporalAddress,
    tinkerBaseUrl: peer.baseUrl,
    taskQueue: stack.taskQueue,
    logFile: join(stack.dir, `skyrl-worker-${++workers}.log`),
    env: { TINKER_API_KEY: peer.apiKey },
  });

/** sl_small on the peer, a checkpoint every 2 steps (what a restore goes back to). */
const peerRun = (): ResolvedRun => testRun(stack, config, [`model_name=${peer.model}`, `base_url=${peer.baseUrl}`, 'renderer_name=qwen3', 'save_every=2']);

/** forward_backward and optim_step requests per model, in the order SkyRL-tx received them (its futures table). */
function skyrlTrainingRequests(): Record<string, TrainingRequest[]> {
  const db = join(dirname(peer.logFile), 'tinker.db');
  const script = `import json, sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("select model_id, request_type from futures order by request_id").fetchall()
print(json.dumps(rows))`;
  const out = spawnSync('python3', ['-c', script, db], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`reading ${db}: ${out.stderr}`);
  const types: Record<string, TrainingRequest['type']> = { forward_backward: 'ForwardBackward', optim_step: 'OptimStep' };
  const requests: Record<string, TrainingRequest[]> = {};
  for (const [model, type] of JSON.parse(out.stdout) as Array<[string | null, string]>) {
    const t = types[type.toLowerCase()];
    if (model && t) (requests[model] ??= []).push({ type: t, seq_id: 0 });
  }
  return requests;
}

/** How many leading metrics rows two runs share exactly. */
function agreeingRows(a: unknown[], b: unknown[]): number {
  let n = 0;
  while (n < Math.min(a.length, b.length) && JSON.stringify(a[n]) === JSON.stringify(b[n])) n++;
  return n;
}

describe('SL on SkyRL-tx under worker kills', { timeout: 3_600_000 }, () => {
  it('a run killed mid-step three times equals an uninterrupted one as far as two uninterrupted runs agree; one forward_backward and one optim_step per step', async () => {
    let w = await worker();
    const [cleanA, cleanB] = [peerRun(), peerRun()];
    const cleanResult = await runToEnd(stack, cleanA);
    await runToEnd(stack, cleanB);
    const agree = agreeingRows(metricsOf(cleanA.run.logPath), metricsOf(cleanB.run.logPath));
    expect(agree, 'steps two uninterrupted runs on SkyRL-tx agree on').toBeGreaterThan(0);

    const crashed = peerRun();
    const handle = await startRun(stack.client, crashed, stack.taskQueue);
    for (const step of [2, 5, 7]) {
      await waitUntil(`step ${step}`, async () => (await handle.query(progressQuery)).step >= step, 1_200_000, 100);
      await untilActivityRunning(handle, 'slStep');
      await w.kill();
      w = await worker();
    }
    const result = (await handle.result()) as RunResult;
    await w.stop();

    expect(result.status).toBe('completed');
    expect(result.steps).toBe(cleanResult.steps);
    expect(result.recoveries).toBeGreaterThanOrEqual(1);
    expect(metricsOf(crashed.run.logPath).slice(0, agree)).toEqual(metricsOf(cleanA.run.logPath).slice(0, agree));

    const requests = skyrlTrainingRequests();
    for (const run of [cleanA, cleanB, crashed]) expect(lineageProblems(run.run.logPath, requests, cleanResult.steps), run.workflowId).toEqual([]);
  });
});
