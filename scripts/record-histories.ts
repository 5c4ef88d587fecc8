// Records replay fixtures (test/fixtures/histories) from real runs on a local test stack:
//   node --import tsx scripts/record-histories.ts
// Only for a deliberate, documented change of workflow shape; normal changes must replay the
// existing fixtures (use patched() in workflow code).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startRun } from '../src/cli/train.js';
import { progressQuery, stopSignal } from '../src/workflows/shared/messages.js';
import { saveHistories } from '../test/support/history.js';
import { startTestStack, testRun, waitUntil, withWorker } from '../test/support/stack.js';

const root = join(import.meta.dirname, '..');
const out = join(root, 'test', 'fixtures', 'histories');
const fixture = (name: string) => join(root, 'test', 'fixtures', name);
const config = fixture('sl_small.json');
mkdirSync(out, { recursive: true });

const stack = await startTestStack();
try {
  await withWorker(stack, async () => {
    const plain = testRun(stack, config, ['num_epochs=1']);
    await (await startRun(stack.client, plain, stack.taskQueue)).result();
    await saveHistories(stack.client, plain.workflowId, join(out, 'sl-plain'));

    const chained = testRun(stack, config, ['num_epochs=1', 'durability.steps_per_workflow_run=2']);
    await (await startRun(stack.client, chained, stack.taskQueue)).result();
    await saveHistories(stack.client, chained.workflowId, join(out, 'sl-continue-as-new'));

    const stopped = testRun(stack, config, ['num_epochs=10']);
    const h = await startRun(stack.client, stopped, stack.taskQueue);
    await waitUntil('step 2', async () => (await h.query(progressQuery)).step >= 2);
    await h.signal(stopSignal, 'recording');
    await h.result();
    await saveHistories(stack.client, stopped.workflowId, join(out, 'sl-stop'));

    const recovered = testRun(stack, config, ['num_epochs=1', 'save_every=2']);
    const hr = await startRun(stack.client, recovered, stack.taskQueue);
    await waitUntil('step 3', async () => (await hr.query(progressQuery)).step >= 3, 120_000, 50);
    await stack.restartEngine();
    await hr.result();
    await saveHistories(stack.client, recovered.workflowId, join(out, 'sl-recovery'));

    const rlSync = testRun(stack, fixture('rl_small.json'), ['dataset.n_batches=3'], 'rl');
    await (await startRun(stack.client, rlSync, stack.taskQueue)).result();
    await saveHistories(stack.client, rlSync.workflowId, join(out, 'rl-sync'));

    const rlAsync = testRun(stack, fixture('rl_small.json'), ['dataset.n_batches=4', 'async_config={"max_steps_off_policy":1,"groups_per_batch":3}', 'durability.steps_per_workflow_run=2'], 'rl');
    await (await startRun(stack.client, rlAsync, stack.taskQueue)).result();
    await saveHistories(stack.client, rlAsync.workflowId, join(out, 'rl-async'));

    const distill = testRun(stack, fixture('distill_small.json'), ['max_steps=2'], 'distill');
    await (await startRun(stack.client, distill, stack.taskQueue)).result();
    await saveHistories(stack.client, distill.workflowId, join(out, 'distill-on-policy'));

    const sampling = testRun(stack, fixture('distill_small.json'), ['mode=off_policy_sample'], 'distill');
    await (await startRun(stack.client, sampling, stack.taskQueue)).result();
    await saveHistories(stack.client, sampling.workflowId, join(out, 'distill-off-policy-sample'));

    const dpo = testRun(stack, fixture('dpo_small.json'), ['max_steps=3'], 'dpo');
    await (await startRun(stack.client, dpo, stack.taskQueue)).result();
    await saveHistories(stack.client, dpo.workflowId, join(out, 'dpo'));

    const pipeline = testRun(stack, fixture('pipeline_small.json'), [], 'pipeline');
    await (await startRun(stack.client, pipeline, stack.taskQueue)).result();
    await saveHistories(stack.client, pipeline.workflowId, join(out, 'pipeline'));
  });
  console.log(`histories written to ${out}`);
} finally {
  await stack.stop();
}
