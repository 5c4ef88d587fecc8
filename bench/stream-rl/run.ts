// bench/stream-rl: wall time of streaming-minibatch RL steps, substeps overlapping the step's
// sampling, side by side with the same step done sample-then-train. Workload: bench/async-rl's
// long-tail generations (a briefly fine-tuned tiny model on arithmetic; some prompts stop after a
// token, others ramble to max_tokens), 8 groups a step in `--substeps` substeps of 2 minibatches.
//   npm run bench:stream-rl [-- --steps 4 --substeps 4]
// Both columns come from the same run's history (activity start and close times), so machine
// drift cannot favour either: "overlapped" is the step as it ran (first rollout scheduled → step
// finished); "sample-then-train" is the same step's sampling (first rollout scheduled → last
// rollout closed) followed by its substeps and finish as they took — what the step costs when no
// substep may start before every group is in (the one-activity streaming path).
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { startRun } from '../../src/cli/train.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { startTestStack, testRun, withWorker } from '../../test/support/stack.js';

const { values } = parseArgs({ options: { steps: { type: 'string', default: '4' }, substeps: { type: 'string', default: '4' } } });
const steps = Number(values.steps);
const substeps = Number(values.substeps);
const workload = join(import.meta.dirname, '..', 'async-rl');
const GROUPS = 8;

interface Span {
  type: string;
  step: number;
  scheduled: number;
  started: number;
  closed: number;
}

/** Every completed activity of the run with its step and its scheduled/started/closed times (ms). */
async function spans(client: Client, workflowId: string): Promise<Span[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = new Map((history.events ?? []).map((e) => [String(e.eventId), e]));
  const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
  const out: Span[] = [];
  for (const e of history.events ?? []) {
    const done = e.activityTaskCompletedEventAttributes;
    if (!done) continue;
    const scheduledEvent = events.get(String(done.scheduledEventId))!;
    const attrs = scheduledEvent.activityTaskScheduledEventAttributes!;
    const input = JSON.parse(new TextDecoder().decode(attrs.input?.payloads?.[0]?.data ?? new Uint8Array())) as { step?: number };
    out.push({
      type: attrs.activityType?.name ?? '',
      step: input?.step ?? -1,
      scheduled: ms(scheduledEvent.eventTime),
      started: ms(events.get(String(done.startedEventId))!.eventTime),
      closed: ms(e.eventTime),
    });
  }
  return out;
}

const stack = await startTestStack({ engineArgs: ['--continuous-batching'] });
try {
  await withWorker(stack, async () => {
    const sft = testRun(stack, join(workload, 'sft.json'));
    const warm = (await (await startRun(stack.client, sft, stack.taskQueue)).result()) as RunResult;
    const run = testRun(
      stack,
      join(workload, 'rl.json'),
      [`load_checkpoint_path=${warm.finalCheckpoint!.statePath}`, `max_steps=${steps}`, `num_substeps=${substeps}`, `stream_minibatch_config={"groups_per_batch":${GROUPS},"num_minibatches":2}`],
      'rl',
    );
    await (await startRun(stack.client, run, stack.taskQueue)).result();
    const all = await spans(stack.client, run.workflowId);
    let overlappedTotal = 0;
    let serialTotal = 0;
    console.log(`streaming step wall time, ${GROUPS} groups in ${substeps} substeps × 2 minibatches (seconds)`);
    console.log('       overlapped  sample-then-train  substeps started while sampling');
    for (let step = 0; step < steps; step++) {
      const of = (type: string) => all.filter((s) => s.step === step && s.type === type);
      const rollouts = of('rlRolloutGroup');
      const trained = of('rlStreamSubstep');
      const [finish] = of('rlStreamFinish');
      if (!finish || rollouts.length === 0) throw new Error(`step ${step}: no streaming step in the history (rolled out ${rollouts.length}, finished ${Boolean(finish)})`);
      const begin = Math.min(...rollouts.map((r) => r.scheduled));
      const sampled = Math.max(...rollouts.map((r) => r.closed));
      const overlapped = finish.closed - begin;
      const serial = sampled - begin + [...trained, finish].reduce((t, s) => t + (s.closed - s.started), 0);
      const early = trained.filter((s) => s.scheduled < sampled).length;
      overlappedTotal += overlapped;
      serialTotal += serial;
      console.log(`step ${String(step).padStart(2)} ${(overlapped / 1000).toFixed(2).padStart(10)}  ${(serial / 1000).toFixed(2).padStart(17)}  ${early} of ${trained.length}`);
    }
    console.log(`total   ${(overlappedTotal / 1000).toFixed(2).padStart(10)}  ${(serialTotal / 1000).toFixed(2).padStart(17)}  (sample-then-train / overlapped: ${(serialTotal / overlappedTotal).toFixed(2)})`);
  });
} finally {
  await stack.stop();
}
