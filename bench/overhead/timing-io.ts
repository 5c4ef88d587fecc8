// What timing costs inside the activities, without the engine's run-to-run noise: a supervised
// step's two activities as the worker runs them (activities/timing.ts's wrapper, a mock activity
// context): a submit that stores its spans and a finish that writes the metrics row with the step's
// timing and its timing_spans.jsonl row, against the same two with COOKBOOK_TIMING=off, which write
// the metrics row alone. The work itself is empty: what is left is timing's bookkeeping and the row.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { stepTiming, withTiming } from '../../src/activities/timing.js';
import { RunStore, type RunRef } from '../../src/cookbook/run-store.js';
import { scopeSpan } from '../../src/cookbook/timing.js';

const step = withTiming({
  async submit(_: { run: RunRef; step: number }) {
    await scopeSpan('submit_batch', () => scopeSpan('get_batch', () => undefined));
  },
  async finish({ run, step }: { run: RunRef; step: number }) {
    await scopeSpan('finish_batch', () => scopeSpan('step', () => undefined));
    const timing = stepTiming(run, step);
    const store = new RunStore(run.logPath);
    store.writeMetrics({ step, epoch: 0, learning_rate: 0.01, num_tokens: 4096, train_mean_nll: 1.5, ...timing.metrics });
    timing.write(store);
  },
});

const inActivity = (fn: (input: { run: RunRef; step: number }) => Promise<void>, input: { run: RunRef; step: number }) =>
  new MockActivityEnvironment({ currentAttemptScheduledTimestampMs: Date.now() }).run(fn, input);

async function msPerStep(steps: number, timing: boolean): Promise<number> {
  const run: RunRef = { workflowId: `timing-io-${timing}`, kind: 'sl', logPath: join(mkdtempSync(join(tmpdir(), 'cookbook-timing-io-')), 'run') };
  new RunStore(run.logPath).init({ workflowId: run.workflowId, kind: 'sl', config: {} }, new Set());
  const saved = process.env.COOKBOOK_TIMING;
  if (!timing) process.env.COOKBOOK_TIMING = 'off';
  try {
    const t0 = performance.now();
    for (let s = 0; s < steps; s++) {
      await inActivity(step.submit, { run, step: s });
      await inActivity(step.finish, { run, step: s });
    }
    return (performance.now() - t0) / steps;
  } finally {
    if (saved === undefined) delete process.env.COOKBOOK_TIMING;
    else process.env.COOKBOOK_TIMING = saved;
  }
}

/** Milliseconds per step of the two activities with timing on and off (alternating blocks, medians). */
export async function timingIoPerStep(steps = 50, blocks = 5): Promise<{ onMs: number; offMs: number }> {
  const on: number[] = [];
  const off: number[] = [];
  for (let b = 0; b < blocks; b++) {
    on.push(await msPerStep(steps, true));
    off.push(await msPerStep(steps, false));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { onMs: median(on), offMs: median(off) };
}
