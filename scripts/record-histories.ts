// Records replay fixtures (test/fixtures/histories) from real runs on a local test stack:
//   node --import tsx scripts/record-histories.ts [--only name,name]
// Only for a deliberate, documented change of workflow shape; normal changes must replay the
// existing fixtures (use patched() in workflow code).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startRun } from '../src/cli/train.js';
import { resolveContinuation } from '../src/cli/continue.js';
import { resolveEval, startEval } from '../src/cli/eval.js';
import { EVAL_SCHEDULE_WORKFLOW, resolveEvalSchedule } from '../src/cli/eval-schedule.js';
import { resolveTts, startTts } from '../src/cli/tts.js';
import { resolveInspectEval, startInspectEval } from '../src/cli/eval-inspect.js';
import { pauseSignal, progressQuery, resumeSignal, setUpdate, stopSignal } from '../src/workflows/shared/messages.js';
import { saveHistories } from '../test/support/history.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, withWorker, workerProcess, type TestStack } from '../test/support/stack.js';

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
  // rl-async: recorded before the rl-async-0.6.1 patch (stale groups requeued); re-recording it records the 0.6.1 schedule.
  'rl-async': async (stack) =>
    finish(stack, testRun(stack, fixture('rl_small.json'), ['dataset.n_batches=4', 'async_config={"max_steps_off_policy":1,"groups_per_batch":3,"loss_fn":"importance_sampling"}', 'durability.steps_per_workflow_run=2'], 'rl')),
  // 0.6.1's async schedule: 2 groups a step from dataset batches of 3 (the last step trains what is
  // left; rollouts of groups no step trains still run at the end), 6 in flight, continuing as new after 2 steps.
  'rl-async-061': async (stack) =>
    finish(stack, testRun(stack, fixture('rl_small.json'), ['dataset.n_batches=3', 'async_config={"max_steps_off_policy":2,"groups_per_batch":2,"loss_fn":"importance_sampling"}', 'durability.steps_per_workflow_run=2'], 'rl')),
  // A registered env whose rollouts fail once (retried), and a custom sampling evaluator each step.
  // The rest of 0.6.1's async loop (patch rl-async-0.6.1-full): the initial checkpoint, then every
  // group dropped for a constant reward as it completes (the untrained model's), so training ends at
  // step 0 when the data runs out; and the same schedule training 3 steps, continuing as new after 2.
  'rl-async-full': async (stack) =>
    finish(stack, testRun(stack, fixture('rl_small.json'), ['dataset.n_batches=3', 'async_config={"max_steps_off_policy":1,"groups_per_batch":2,"loss_fn":"importance_sampling"}', 'remove_constant_reward_groups=true', 'durability.steps_per_workflow_run=2'], 'rl')),
  'rl-async-full-trained': async (stack) =>
    finish(stack, testRun(stack, fixture('rl_small.json'), ['dataset.n_batches=3', 'async_config={"max_steps_off_policy":1,"groups_per_batch":2,"loss_fn":"importance_sampling"}', 'durability.steps_per_workflow_run=2'], 'rl')),
  // Async with streaming minibatches: 2 groups a step in 2 substeps, taken as they complete.
  'rl-async-stream': async (stack) =>
    finish(stack, testRun(stack, fixture('rl_small.json'), ['dataset.n_batches=3', 'async_config={"max_steps_off_policy":1,"groups_per_batch":2,"loss_fn":"importance_sampling"}', 'stream_minibatch_config={"groups_per_batch":2,"num_minibatches":1}', 'num_substeps=2', 'durability.steps_per_workflow_run=2'], 'rl')),
  'rl-evaluators': async (stack) => finish(stack, testRun(stack, fixture('rl_flaky.json'), [], 'rl')),
  'distill-on-policy': async (stack) => finish(stack, testRun(stack, fixture('distill_small.json'), ['max_steps=2'], 'distill')),
  'distill-off-policy-sample': async (stack) => finish(stack, testRun(stack, fixture('distill_small.json'), ['mode=off_policy_sample'], 'distill')),
  dpo: async (stack) => finish(stack, testRun(stack, fixture('dpo_small.json'), ['max_steps=3'], 'dpo')),
  prompt_distill: async (stack) => finish(stack, testRun(stack, fixture('prompt_distill_small.json'), [], 'prompt_distill')),
  // Teacher passes one step ahead, continuing as new after two steps (the prefetch settled first), a checkpoint at step 2.
  distill_off_policy: async (stack) => finish(stack, testRun(stack, fixture('distill_off_policy_small.json'), ['max_steps=4', 'durability.steps_per_workflow_run=2'], 'distill_off_policy')),
  // Brier steps through forward_backward_custom, evals at the start and the end (their closing row), a checkpoint after step 2.
  decisions: async (stack) => finish(stack, testRun(stack, fixture('decisions_small.json'), ['epochs=2', 'save_every=2'], 'decisions')),
  // Top-K steps with an eval at the start, the teacher synced after every step, continuing as new after each step.
  sdft: async (stack) =>
    finish(stack, testRun(stack, fixture('sdft_small.json'), ['teacher_sync_every=1', 'durability.steps_per_workflow_run=1', 'eval_every=2', `evaluators=${JSON.stringify([{ kind: 'custom_sampling', name: 'science', file_path: join(root, 'data', 'sdft', 'eval_science.jsonl'), grader: 'sdft_science', max_tokens: 4, temperature: 0 }])}`], 'sdft')),
  pipeline: async (stack) => finish(stack, testRun(stack, fixture('pipeline_small.json'), [], 'pipeline')),
  // Streaming minibatches, 2 substeps per step (rl-stream-single: recorded before the substeps became their own activities).
  'rl-stream': async (stack) => finish(stack, testRun(stack, fixture('rl_parity.json'), ['num_epochs=1'], 'rl')),
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
  // Each step's reference logprobs computed while the step before it trains (patch dpo-reference-ahead).
  'dpo-reference-ahead': async (stack) => finish(stack, testRun(stack, fixture('dpo_small.json'), ['max_steps=4'], 'dpo')),
  'dpo-reference-ahead-unpipelined': async (stack) => finish(stack, testRun(stack, fixture('dpo_small.json'), ['max_steps=3', 'submit_ahead=0'], 'dpo')),
  // Step 1's reference logprobs started once step 0's training calls are submitted (patch dpo-reference-ahead-after-own-pass).
  'dpo-reference-ahead-own-pass': async (stack) => finish(stack, testRun(stack, fixture('dpo_small.json'), ['max_steps=4'], 'dpo')),
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

// A sweep whose point is a pipeline, paused and `set` while the point's DPO stage runs: the sweep
// forwards the set to the point, the point to its stage (recorded too, as pipeline-set).
recordings['sweep-pipeline-set'] = async (stack) => {
  const run = testRun(stack, fixture('sweep_pipeline.json'), ['max_runs=1'], 'sweep');
  const h = await startRun(stack.client, run, stack.taskQueue);
  const point = `${run.workflowId}/000-stages.1.learning_rate=0.01`;
  const stage = `${point}/1-dpo`;
  await waitUntil('the DPO stage at step 1', async () => (await stack.client.workflow.getHandle(stage).query(progressQuery)).step >= 1, 300_000, 50);
  await h.signal(pauseSignal);
  await waitUntil('the DPO stage paused', async () => (await stack.client.workflow.getHandle(stage).query(progressQuery)).status === 'paused', 60_000, 100);
  await h.executeUpdate(setUpdate, { args: [{ lr_multiplier: 0.5, save_every: 3 }] });
  await h.signal(resumeSignal);
  await h.result();
  await saveHistories(stack.client, point, join(out, 'pipeline-set'));
  return run.workflowId;
};

// Rolling resume-only checkpoints (saved, the previous deleted) and a run continued from another's final checkpoint.
recordings['sl-rolling'] = async (stack) => finish(stack, testRun(stack, config, ['num_epochs=1', 'rolling_save_every=1']));
// Periodic saves beside the next steps and on tokens trained, continuing as new with a save still running (settled first).
recordings['sl-save-triggers'] = async (stack) =>
  finish(stack, testRun(stack, config, ['num_epochs=1', 'save_every=3', 'async_periodic_saves=true', 'save_every_tokens=250', 'durability.steps_per_workflow_run=4']));
recordings['sl-continued'] = async (stack) => {
  const parent = testRun(stack, config, ['num_epochs=1', 'lr_schedule=constant']);
  await finish(stack, parent);
  const id = `sl-continued-${Date.now()}`;
  return finish(stack, resolveContinuation(parent.run.logPath, ['num_epochs=2', `log_path=${join(stack.dir, 'runs', id)}`], { workflowId: id }));
};

// `cookbook eval`: four chunks two at a time, two samples per example (pass@k).
recordings.eval = async (stack) => {
  const r = resolveEval('tiny-qwen3', 'gsm8k', { set: ['limit=4', 'chunk_size=1', 'concurrency=2', 'max_tokens=16', 'temperature=1.0', 'num_samples=2'] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-${Date.now()}` });
  await (await startEval(stack.client, r, stack.taskQueue)).result();
  return r.workflowId;
};

// `cookbook eval` with its activities' attempts bounded (max_attempts, in configs since #56): two chunks.
recordings['eval-max-attempts'] = async (stack) => {
  const r = resolveEval('tiny-qwen3', 'gsm8k', { set: ['limit=2', 'chunk_size=1', 'max_tokens=8', 'max_attempts=3'] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-max-attempts-${Date.now()}` });
  await (await startEval(stack.client, r, stack.taskQueue)).result();
  return r.workflowId;
};

// A firing of an eval schedule (`cookbook eval <run> --every …`): an SL run's sampler checkpoints
// on two benchmarks, each pair a child eval workflow, two at a time, the pairs fetched 3 at a time.
recordings.eval_schedule = async (stack) => {
  const parent = testRun(stack, config, ['num_epochs=1', 'save_every=3']);
  await finish(stack, parent);
  const s = resolveEvalSchedule(parent.run.logPath, ['gsm8k', 'mmlu'], '1h', { limit: '2', set: ['max_tokens=8', 'chunk_size=1'] });
  const id = `eval_schedule-${Date.now()}`;
  await (await stack.client.workflow.start(EVAL_SCHEDULE_WORKFLOW, { taskQueue: stack.taskQueue, workflowId: id, args: [{ ...s.input, perBatch: 3 }] })).result();
  return id;
};

// `cookbook tts`: three problems in two chunks, two at a time.
recordings.tts = async (stack) => {
  const r = resolveTts('tiny-qwen3', { limit: '3', set: ['chunk_size=2', 'concurrency=2', 'max_tokens=16', 'temperature=1.0'] }, { runsDir: join(stack.dir, 'runs'), workflowId: `tts-${Date.now()}` });
  await (await startTts(stack.client, r, stack.taskQueue)).result();
  return r.workflowId;
};

// `cookbook eval --inspect`: the shipped Inspect task, its first three samples.
recordings.eval_inspect = async (stack) => {
  const r = resolveInspectEval('tiny-qwen3', `${join(root, 'data', 'eval', 'inspect', 'arithmetic.py')}@arithmetic`, { limit: '3', set: ['max_tokens=8'] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval_inspect-${Date.now()}` });
  await (await startInspectEval(stack.client, r, stack.taskQueue)).result();
  return r.workflowId;
};

// On a server that ignores seq_id (the engine with --ignore-seq-id; a stack of its own): steps one at a
// time although submit_ahead and async_periodic_saves ask otherwise, and a worker SIGKILLed mid-step
// whose retried step restores the last checkpoint (StepOutcomeUnknown) instead of resending.
const onServerIgnoringSeqId: Record<string, (stack: TestStack) => Promise<string>> = {
  'sl-unsequenced': async (stack) => {
    const run = testRun(stack, config, ['num_epochs=1', 'save_every=2', 'submit_ahead=1', 'async_periodic_saves=true']);
    let worker = await workerProcess(stack, 'worker-unsequenced-1');
    const h = await startRun(stack.client, run, stack.taskQueue);
    await waitUntil('step 3', async () => (await h.query(progressQuery)).step >= 3, 120_000, 50);
    await untilActivityRunning(h, 'slStep');
    await worker.kill();
    worker = await workerProcess(stack, 'worker-unsequenced-2');
    await h.result();
    await worker.stop();
    return run.workflowId;
  },
};

async function finish(stack: TestStack, run: ReturnType<typeof testRun>): Promise<string> {
  await (await startRun(stack.client, run, stack.taskQueue)).result();
  return run.workflowId;
}

const { values } = parseArgs({ options: { only: { type: 'string' } } });
const all = [...Object.keys(recordings), ...Object.keys(onServerIgnoringSeqId)];
const names = values.only ? values.only.split(',') : all;
for (const name of names) if (!all.includes(name)) throw new Error(`--only: no recording "${name}" (have: ${all.join(', ')})`);

const onEngine = names.filter((n) => recordings[n]);
if (onEngine.length > 0) {
  const stack = await startTestStack();
  try {
    await withWorker(stack, async () => {
      for (const name of onEngine) await saveHistories(stack.client, await recordings[name](stack), join(out, name));
    });
  } finally {
    await stack.stop();
  }
}
const unsequenced = names.filter((n) => onServerIgnoringSeqId[n]);
if (unsequenced.length > 0) {
  const stack = await startTestStack({ own: true, engineArgs: ['--ignore-seq-id'] });
  try {
    for (const name of unsequenced) await saveHistories(stack.client, await onServerIgnoringSeqId[name](stack), join(out, name));
  } finally {
    await stack.stop();
  }
}
console.log(`histories written to ${out}: ${names.join(', ')}`);
