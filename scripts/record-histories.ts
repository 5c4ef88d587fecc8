// Records replay fixtures (test/fixtures/histories) from real runs on a local test stack:
//   node --import tsx scripts/record-histories.ts [--only name,name]
// Only for a deliberate, documented change of workflow shape; normal changes must replay the
// existing fixtures (use patched() in workflow code).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startRun } from '../src/cli/train.js';
import { resolveContinuation } from '../src/cli/continue.js';
import { progressQuery, stopSignal } from '../src/workflows/shared/messages.js';
import { saveHistories } from '../test/support/history.js';
import { startTestStack, testRun, waitUntil, withWorker, type TestStack } from '../test/support/stack.js';

const root = join(import.meta.dirname, '..');
const out = join(root, 'test', 'fixtures', 'histories');
const fixture = (name: string) => join(root, 'test', 'fixtures', name);
const config = fixture('sl_small.json');
mkdirSync(out, { recursive: true });

/** Each recording runs a workflow to its end and saves its history (one file per workflow run). */
const recordings: Record<string, (stack: TestStack) => Promise<string>> = {
  'sl-plain': async (stack) => finish(stack, testRun(stack, config, ['num_epochs=1'])),
  'sl-continue-as-new': async (stack) => finish(stack, testRun(stack, config, ['num_epochs=1', 'durability.steps_per_workflow_run=2'])),
  'sl-stop': async (stack) => {
    const stopped = testRun(stack, config, ['num_epochs=10']);
    const h = await startRun(stack.client, stopped, stack.taskQueue);
    await waitUntil('step 2', async () => (await h.query(progressQuery)).step >= 2);
    await h.signal(stopSignal, 'recording');
    await h.result();
    return stopped.workflowId;
  },
  'sl-recovery': async (stack) => {
    const recovered = testRun(stack, config, ['num_epochs=1', 'save_every=2']);
    const hr = await startRun(stack.client, recovered, stack.taskQueue);
    await waitUntil('step 3', async () => (await hr.query(progressQuery)).step >= 3, 120_000, 50);
    await stack.restartEngine();
    await hr.result();
    return recovered.workflowId;
  },
  'rl-sync': async (stack) => finish(stack, testRun(stack, fixture('rl_small.json'), ['dataset.n_batches=3'], 'rl')),
  'rl-async': async (stack) =>
    finish(stack, testRun(stack, fixture('rl_small.json'), ['dataset.n_batches=4', 'async_config={"max_steps_off_policy":1,"groups_per_batch":3}', 'durability.steps_per_workflow_run=2'], 'rl')),
  // A registered env whose rollouts fail once (retried), and a custom sampling evaluator each step.
  'rl-evaluators': async (stack) => finish(stack, testRun(stack, fixture('rl_flaky.json'), [], 'rl')),
  'distill-on-policy': async (stack) => finish(stack, testRun(stack, fixture('distill_small.json'), ['max_steps=2'], 'distill')),
  'distill-off-policy-sample': async (stack) => finish(stack, testRun(stack, fixture('distill_small.json'), ['mode=off_policy_sample'], 'distill')),
  dpo: async (stack) => finish(stack, testRun(stack, fixture('dpo_small.json'), ['max_steps=3'], 'dpo')),
  pipeline: async (stack) => finish(stack, testRun(stack, fixture('pipeline_small.json'), [], 'pipeline')),
  // Pipelined steps (submit_ahead 1; the recordings above predate it and replay unpipelined).
  'sl-pipelined': async (stack) => finish(stack, testRun(stack, config, ['num_epochs=1', 'submit_ahead=1', 'durability.steps_per_workflow_run=3'])),
  'sl-pipelined-recovery': async (stack) => {
    const recovered = testRun(stack, config, ['num_epochs=1', 'save_every=2', 'submit_ahead=1']);
    const hr = await startRun(stack.client, recovered, stack.taskQueue);
    await waitUntil('step 3', async () => (await hr.query(progressQuery)).step >= 3, 120_000, 50);
    await stack.restartEngine();
    await hr.result();
    return recovered.workflowId;
  },
  'dpo-pipelined': async (stack) => finish(stack, testRun(stack, fixture('dpo_small.json'), ['max_steps=4', 'submit_ahead=1'], 'dpo')),
  // Three SL points as child workflows, two at a time, continuing as new after two (the parent's runs).
  sweep: async (stack) => finish(stack, testRun(stack, fixture('sweep_chaos.json'), [], 'sweep')),
  'sweep-stop': async (stack) => {
    const stopped = testRun(stack, fixture('sweep_chaos.json'), ['max_concurrent=1'], 'sweep');
    const h = await startRun(stack.client, stopped, stack.taskQueue);
    await waitUntil('point 0 at step 1', async () => (await stack.client.workflow.getHandle(`${stopped.workflowId}/000-learning_rate=0.01_lora_rank=4`).query(progressQuery)).step >= 1, 120_000, 50);
    await h.signal(stopSignal, 'recording');
    await h.result();
    return stopped.workflowId;
  },
};

// Rolling resume-only checkpoints (saved, the previous deleted) and a run continued from another's final checkpoint.
recordings['sl-rolling'] = async (stack) => finish(stack, testRun(stack, config, ['num_epochs=1', 'rolling_save_every=1']));
recordings['sl-continued'] = async (stack) => {
  const parent = testRun(stack, config, ['num_epochs=1', 'lr_schedule=constant']);
  await finish(stack, parent);
  const id = `sl-continued-${Date.now()}`;
  return finish(stack, resolveContinuation(parent.run.logPath, ['num_epochs=2', `log_path=${join(stack.dir, 'runs', id)}`], { workflowId: id }));
};

async function finish(stack: TestStack, run: ReturnType<typeof testRun>): Promise<string> {
  await (await startRun(stack.client, run, stack.taskQueue)).result();
  return run.workflowId;
}

const { values } = parseArgs({ options: { only: { type: 'string' } } });
const names = values.only ? values.only.split(',') : Object.keys(recordings);
for (const name of names) if (!recordings[name]) throw new Error(`--only: no recording "${name}" (have: ${Object.keys(recordings).join(', ')})`);

const stack = await startTestStack();
try {
  await withWorker(stack, async () => {
    for (const name of names) await saveHistories(stack.client, await recordings[name](stack), join(out, name));
  });
  console.log(`histories written to ${out}: ${names.join(', ')}`);
} finally {
  await stack.stop();
}
