// A run config's `capture` on a tiny RL run on the real stack: every sampled sequence of the run's
// rollouts is a wire row with its run coordinates, as many per step as the trajectories the run
// store holds, token for token; each step's training call is recorded once; and replaying a
// group's rows (what a retried activity sends) stores nothing twice.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeDataset } from '../../src/capture/export/dataset.js';
import { flushRunCapture, rolloutRows } from '../../src/capture/run-capture.js';
import type { WireRow } from '../../src/capture/rows.js';
import { CaptureStoreClient, ensureCaptureStore } from '../../src/capture/store/client.js';
import { readDaemonInfo } from '../../src/capture/store/daemon.js';
import { startRun } from '../../src/cli/train.js';
import { deserializeTrajectoryGroup } from '../../src/cookbook/rl/serialize.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { loadConversationsJsonl } from '../../src/cookbook/supervised/jsonl.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const config = join(import.meta.dirname, '..', 'fixtures', 'rl_small.json');
// The gate's run is one step; the fuller tier's two show each step sampling the weights the last saved.
const STEPS = fullTier ? 2 : 1;

describe('RL run with capture on', { timeout: 600_000 }, () => {
  let stack: TestStack;
  let dir: string;
  let store: CaptureStoreClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'h61f-rl-'));
    stack = await startTestStack();
    store = new CaptureStoreClient(await ensureCaptureStore(dir, { idleShutdownMinutes: 10 }));
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
    const daemon = dir ? readDaemonInfo(dir) : null;
    if (daemon) process.kill(daemon.pid, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  it('records every rollout of every step with its coordinates, tokens equal to the run store’s, once', async () => {
    const run = testRun(stack, config, [`max_steps=${STEPS}`, `capture={"url": "${store.baseUrl}"}`], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    expect(await flushRunCapture()).toBe(true);

    const rows = await store.allRows({ run_id: run.workflowId, purpose: 'rollout' });
    const runStore = new RunStore(run.run.logPath);
    const samplers = new Map<number, string>();
    for (let step = 0; step < STEPS; step++) {
      const batch = join('rollouts', `batch_${String(step).padStart(6, '0')}`);
      const groups = readdirSync(join(run.run.logPath, '.cookbook', 'store', batch)).sort();
      const stored = groups.map((g) => deserializeTrajectoryGroup(runStore.readBlob(`${batch}/${g}`).toString('utf8')));
      const ofStep = rows.filter((r) => r.iteration === step);
      // One row per sampled sequence: every trajectory's every turn, of every group the run store holds.
      expect(ofStep).toHaveLength(stored.reduce((n, g) => n + g.trajectoriesG.reduce((m, t) => m + t.transitions.length, 0), 0));
      stored.forEach((group, g) => {
        group.trajectoriesG.forEach((traj, t) =>
          traj.transitions.forEach((tr, turn) => {
            const row = ofStep.find((r) => r.group_idx === g && r.traj_idx === t && r.seq_id === turn) as WireRow;
            expect(row.prompt_tokens).toEqual(tr.ob.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : [])));
            expect(row.sampled_tokens).toEqual(tr.ac.tokens);
            expect(row.logprobs!.map((x) => Math.fround(x))).toEqual(tr.ac.maybeLogprobs!.map((x) => Math.fround(x)));
            expect((row.metadata as { reward: number }).reward).toBe(group.getTotalRewards()[t]);
          }),
        );
      });
      samplers.set(step, ofStep[0].policy_version!);
      expect(new Set(ofStep.map((r) => r.policy_version)).size).toBe(1);
    }
    // Each step samples from the weights the step before saved.
    if (STEPS > 1) {
      expect(samplers.get(0)).not.toBe(samplers.get(1));
      expect(samplers.get(1)).toMatch(/sampler_000001/);
    }

    // One forward_backward and one optim_step per step, with the step's datums.
    const ops = (await store.annotations({ run_id: run.workflowId, kind: 'train_op' })).annotations.map((a) => a.payload as { op: string; iteration: number; num_datums: number });
    expect(ops.map((o) => [o.iteration, o.op]).sort()).toEqual(Array.from({ length: STEPS }, (_, step) => [[step, 'forward_backward'], [step, 'optim_step']]).flat());
    expect(ops.find((o) => o.op === 'forward_backward')!.num_datums).toBeGreaterThan(0);

    // Rejection sampling from the capture: the best-rewarded rollouts as SFT token records.
    const rewardOf = (r: WireRow) => (r.metadata as { reward: number }).reward;
    const top = Math.max(...rows.map(rewardOf));
    const sft = join(dir, 'best.jsonl');
    const exported = writeDataset(await store.allRows({ run_id: run.workflowId }), [], { format: 'sft', out: sft, filter: { purpose: 'rollout', minReward: top } });
    const best = rows.filter((r) => rewardOf(r) >= top);
    expect(exported.records).toBe(best.length);
    const parsed = await loadConversationsJsonl(sft);
    expect(parsed.map((p) => p.record!.tokens)).toEqual(best.map((r) => [...r.prompt_tokens!, ...r.sampled_tokens!]));

    // A retried rollout activity sends the same rows again: the store keeps the first of each.
    const batch0 = join('rollouts', 'batch_000000');
    const group0 = deserializeTrajectoryGroup(runStore.readBlob(`${batch0}/${readdirSync(join(run.run.logPath, '.cookbook', 'store', batch0)).sort()[0]}`).toString('utf8'));
    const resent = rolloutRows(group0, { run: run.run, iteration: 0, group: 0, attempt: 0, purpose: 'rollout', policyVersion: samplers.get(0)! });
    expect(await store.ingest(resent.map((row) => ({ type: 'wire_row' as const, row })))).toMatchObject({ inserted: 0, deduped: resent.length });
  });
});
