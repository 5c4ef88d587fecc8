// The vlm_classifier recipe end to end (configs/vlm_classifier.json as shipped): tiny-qwen3-vl trained
// with LoRA on the shapes set through the real stack (Temporal dev server, the engine over HTTP), the
// reference's ClassifierEvaluator sampling greedy class names from the pre-step snapshots. The
// untrained model names no class; after 300 steps its accuracy is well above chance (1 in 9), and the
// test NLL has fallen. ~3 minutes of steps on an idle 2-core machine: the fuller tier.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { metricsOf } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const config = join(import.meta.dirname, '..', '..', 'configs', 'vlm_classifier.json');
const CHANCE = 1 / 9;

describe('vlm_classifier recipe: accuracy', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('trains tiny-qwen3-vl on the shapes set: accuracy rises from none to well above chance', async () => {
    const run = testRun(stack, config);
    const result = (await withWorker(stack, () => runToEnd(stack, run))) as RunResult;
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(306);

    const evals = metricsOf(run.run.logPath).filter((r) => 'accuracy' in r);
    expect(evals.map((r) => r.step)).toEqual([0, 50, 100, 150, 200, 250, 300]);
    const accuracy = evals.map((r) => r.accuracy as number);
    const testNll = evals.map((r) => r['test/nll'] as number);
    console.log(`vlm_classifier: accuracy by eval step ${JSON.stringify(evals.map((r) => [r.step, r.accuracy]))}, test/nll ${JSON.stringify(testNll.map((x) => Number(x.toFixed(3))))}`);
    expect(accuracy[0]).toBe(0);
    expect(accuracy[accuracy.length - 1]).toBeGreaterThan(2 * CHANCE);
    expect(testNll[testNll.length - 1]).toBeLessThan(testNll[0] / 10);
  }, 1_200_000);
});
