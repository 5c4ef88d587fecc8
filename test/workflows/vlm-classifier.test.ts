// The vlm_classifier recipe's wiring on the real stack (the gate's short run; the accuracy run is
// vlm-classifier-accuracy.full.test.ts): configs/vlm_classifier.json cut to 6 steps trains on batches
// whose images the activities decode from the dataset's config, the `vlm_classifier` evaluator and
// the test-split NLL log `accuracy` and `test/nll` at the eval steps, and no image bytes go through
// Temporal (only the config and run-store references do).
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkHistories } from '../support/history.js';
import { metricsOf } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', '..', 'configs', 'vlm_classifier.json');

describe('vlm_classifier recipe', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('a short run logs accuracy and test/nll at its eval steps; images stay out of Temporal payloads', async () => {
    const run = testRun(stack, config, ['max_steps=6', 'eval_every=5', 'save_every=0', 'dataset.test_size=18', 'evaluators.0.n_eval=9']);
    const result = (await withWorker(stack, () => runToEnd(stack, run))) as RunResult;
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(6);

    const rows = metricsOf(run.run.logPath);
    expect(rows.filter((r) => 'accuracy' in r).map((r) => r.step)).toEqual([0, 5]);
    expect(rows.filter((r) => 'test/nll' in r).map((r) => r.step)).toEqual([0, 5]);
    const [first, last] = rows.filter((r) => 'test/nll' in r).map((r) => r['test/nll'] as number);
    expect(last).toBeLessThan(first);
    // Eight sequences of 16 image tokens and ~30 text tokens per step.
    expect(rows[0].num_sequences).toBe(8);
    expect(rows[0].num_tokens as number).toBeGreaterThan(8 * 16);

    const hygiene = await checkHistories(stack.client, run.workflowId, ['tml-test']);
    expect(hygiene.maxPayloadBytes).toBeLessThan(32 * 1024);
  });
});
