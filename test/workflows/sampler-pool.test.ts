// #41 on the real stack: RL sampling spread over several engines (`sampler_pool`), and training
// moved to another engine when its own is lost (`failover`). Each run is compared with one that
// sampled and trained on a single engine: same metrics, checkpoints, rollouts and weights.
//   - gate: N = 3 (the trainer and two sampler engines), one sampler engine killed mid-run once it
//     has sampled: the N = 1 run, every engine having sampled;
//   - gate: the training engine killed after a checkpoint: the run goes on on the failover engine
//     from that checkpoint (imported from the run store's mirror), ends equal, and says so in
//     failovers.json and the report;
//   - fuller tier: N = 3 with nothing killed.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngine, type Service } from '../../src/cli/services.js';
import { startRun } from '../../src/cli/train.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { buildReportHtml } from '../../src/report/report.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { onFreePort } from '../support/free-port.js';
import { once } from '../support/once.js';
import { expectSameRun } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, withWorker, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'rl_small.json');
const STEPS = ['max_steps=3', 'save_every=2'];

type Engine = Service & { baseUrl: string };

/** Settled sample requests an engine served (its /metrics). */
async function samplesServed(engine: Engine): Promise<number> {
  const text = await (await fetch(`${engine.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tinker_engine_requests_total{') && l.includes('type="Sample"') && l.includes('outcome="done"'));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

describe('sampler pool and training failover', { timeout: 900_000 }, () => {
  let stack: TestStack;
  const engines: Engine[] = [];
  const engine = async (name: string): Promise<Engine> => {
    const { service } = await onFreePort({ dataDir: join(stack.dir, name) }, startEngine);
    engines.push(service);
    return service;
  };

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.stop().catch(() => undefined)));
    await stack?.stop();
  });

  /** The run on the stack's engine alone: what every other run must equal. */
  const single = once(async () => {
    const run = testRun(stack, config, STEPS, 'rl');
    const result = (await withWorker(stack, async () => (await startRun(stack.client, run, stack.taskQueue)).result())) as RunResult;
    expect(result.status).toBe('completed');
    return { run, result };
  });

  async function expectSameAs(logPath: string, result: RunResult, trainerUrl: string): Promise<void> {
    const clean = await single();
    expect(result.steps).toBe(clean.result.steps);
    await expectSameRun(
      { logPath, samplerPath: result.finalCheckpoint!.samplerPath!, baseUrl: trainerUrl },
      { logPath: clean.run.run.logPath, samplerPath: clean.result.finalCheckpoint!.samplerPath!, baseUrl: stack.engine.baseUrl },
    );
  }

  /** Sampler engines kept for the next test (the killed one is not). */
  let spare: Engine | undefined;

  it('N = 3 engines, one killed mid-run once it has sampled: what one engine samples, costing only time', async () => {
    const [a, b] = await Promise.all([engine('doomed-a'), engine('sampler-b')]);
    await single();
    const before = await Promise.all([stack.engine as Engine, a, b].map(samplesServed));
    const pool = JSON.stringify({ base_urls: [stack.engine.baseUrl, a.baseUrl, b.baseUrl], max_in_flight: 2, retry_after_s: 60 });
    const run = testRun(stack, config, [...STEPS, `sampler_pool=${pool}`], 'rl');
    let killedAfter = 0;
    const result = (await withWorker(stack, async () => {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      await waitUntil('engine a sampling', async () => (killedAfter = (await samplesServed(a)) - before[1]) >= 3, 300_000, 50);
      await a.kill();
      return handle.result();
    })) as RunResult;
    expect(killedAfter).toBeGreaterThanOrEqual(3);
    const after = await Promise.all([stack.engine as Engine, b].map(samplesServed));
    expect(after[0] - before[0], 'the trainer').toBeGreaterThan(0);
    expect(after[1] - before[2], 'engine b').toBeGreaterThan(0);
    await expectSameAs(run.run.logPath, result, stack.engine.baseUrl);
    spare = b;
  });

  it.skipIf(!fullTier)('N = 3 engines with nothing killed sample what one engine samples', async () => {
    const [a, b] = await Promise.all([engine('sampler-c'), engine('sampler-d')]);
    await single();
    const before = await Promise.all([stack.engine as Engine, a, b].map(samplesServed));
    const pool = JSON.stringify({ base_urls: [stack.engine.baseUrl, a.baseUrl, b.baseUrl], max_in_flight: 2 });
    const run = testRun(stack, config, [...STEPS, `sampler_pool=${pool}`], 'rl');
    const result = (await withWorker(stack, async () => (await startRun(stack.client, run, stack.taskQueue)).result())) as RunResult;
    const after = await Promise.all([stack.engine as Engine, a, b].map(samplesServed));
    after.forEach((n, i) => expect(n - before[i], `engine ${i}`).toBeGreaterThan(0));
    await expectSameAs(run.run.logPath, result, stack.engine.baseUrl);
  });

  it('the training engine lost after a checkpoint: the run goes on on the failover engine and ends the same', async () => {
    const [trainer, target] = await Promise.all([engine('trainer'), spare ?? engine('spare')]);
    await single();
    const failover = JSON.stringify({ base_urls: [target.baseUrl], after_s: 2 });
    const run = testRun(stack, config, [...STEPS, `base_url=${trainer.baseUrl}`, `failover=${failover}`], 'rl');
    const store = new RunStore(run.run.logPath);
    const result = (await withWorker(stack, async () => {
      const handle = await startRun(stack.client, run, stack.taskQueue);
      await waitUntil('the checkpoint after two steps', async () => store.readCheckpoints().length >= 1, 300_000, 50);
      await trainer.kill();
      return handle.result();
    })) as RunResult;
    expect(result.status).toBe('completed');
    const [moved] = store.readFailovers();
    expect(store.readFailovers()).toHaveLength(1);
    expect(moved).toMatchObject({ step: 2, from: trainer.baseUrl, to: target.baseUrl, checkpoint: '000002' });
    expect(moved.reason).toMatch(/training backend has not answered for \d+ s/);
    await expectSameAs(run.run.logPath, result, target.baseUrl);
    // The report says where the run went on, and from which checkpoint.
    const html = await buildReportHtml([run.run.logPath]);
    expect(html).toContain('Training moved to another backend once');
    expect(html).toContain(target.baseUrl);
  });
});
