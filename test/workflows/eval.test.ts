// `cookbook eval`'s workflow on the real stack (Temporal dev server, the engine over HTTP, the
// real tokenizer): every sample suite on a base model, and a tinker:// checkpoint whose base model
// comes from weights_info. results.json holds every example, its verdict is the suite's grade of
// the stored response, and the aggregate is the suite's aggregate of those verdicts.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '@temporalio/worker';
import { createTinkerBackend } from '../../src/backends/index.js';
import { workflowBundle } from '../../src/workers/worker.js';
import { resolveEval, startEval } from '../../src/cli/eval.js';
import { loadBenchmark } from '../../src/cookbook/eval/benchmark-data.js';
import { aggregateResults } from '../../src/cookbook/eval/benchmark-run.js';
import type { EvalResultsFile } from '../../src/cookbook/eval/results.js';
import { SUITES } from '../../src/cookbook/eval/suites/index.js';
import type { EvalWorkflowResult } from '../../src/workflows/eval.js';
import { startTestStack, withWorker, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';

const MODEL = 'tiny-qwen3';
/**
 * The workflow's mechanics do not depend on the suite, and each suite's prompts and grading are
 * pinned beside the reference by its parity test; the gate runs one suite of each shape through
 * the workflow (a plain answer, per-example metrics, per-group accuracy, a grader whose sandbox
 * runs are recorded, a suite read from one config per subject), the fuller tier every suite.
 */
const GATE_SUITES = ['gsm8k', 'ifeval', 'mmlu', 'mbpp', 'ceval'];
let stack: TestStack;
let counter = 0;
/** The workflow id of each suite's latest eval. */
const lastId: Record<string, string> = {};

async function evaluate(model: string, suite: string, set: string[] = []): Promise<{ result: EvalWorkflowResult; file: EvalResultsFile }> {
  const r = resolveEval(model, suite, { set: ['max_tokens=12', 'chunk_size=2', ...set] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-test-${suite}-${++counter}` });
  lastId[suite] = r.workflowId;
  const result = (await (await startEval(stack.client, r, stack.taskQueue)).result()) as EvalWorkflowResult;
  return { result, file: JSON.parse(readFileSync(result.resultsPath, 'utf8')) as EvalResultsFile };
}

describe('eval workflow', () => {
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it(`evaluates a base model on ${fullTier ? 'every sample suite' : `the gate's suites (${GATE_SUITES.join(', ')})`}: every example graded, aggregate = the suite aggregate of the stored verdicts`, async () => {
    for (const name of GATE_SUITES) expect(Object.keys(SUITES), name).toContain(name);
    await withWorker(stack, async () => {
      // A judged suite (arena_hard) re-grades only through its recorded judge: test/workflows/eval-arena.test.ts.
      for (const [name, suite] of Object.entries(SUITES).filter(([n, s]) => !s.judged && (fullTier || GATE_SUITES.includes(n)))) {
        const { items } = await loadBenchmark({ suite: name, data_path: null, data_name: null, data_split: null, limit: null, system_prompt: null });
        const { result, file } = await evaluate(MODEL, name);
        expect(result.status).toBe('completed');
        expect(file.examples.map((e) => e.index)).toEqual(items.map((_, i) => i));
        expect(file.examples.map((e) => e.id)).toEqual(items.map((i) => i.id));
        for (const [i, e] of file.examples.entries()) {
          expect(e.response.length).toBeGreaterThan(0);
          expect((await suite.grade(e.response, items[i])).correct).toBe(e.correct);
        }
        expect(result.metrics).toEqual(aggregateResults(suite, file.examples));
        expect(file.metrics.num_examples).toBe(items.length);
        expect(file.base_model).toBe(MODEL);
        expect(readFileSync(join(result.logPath, 'results.md'), 'utf8')).toContain(`| score`);
        // A code suite's sandbox runs are side effects of their samples, recorded in the run's store.
        if (name === 'mbpp') expect(readdirSync(join(result.logPath, '.cookbook', 'store', 'side_effects')).sort()).toEqual(items.map((_, i) => `eval_${i}_0`).sort());
      }
      // The workflow is deterministic: its history (chunks interleaved across lanes) replays.
      const id = lastId.ifeval;
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, await stack.client.workflow.getHandle(id).fetchHistory(), id);
    });
  }, fullTier ? 1_200_000 : undefined);

  it('seeds come from (seed, suite, example): the same eval samples the same responses, another seed other ones', async () => {
    await withWorker(stack, async () => {
      const a = await evaluate(MODEL, 'gsm8k', ['temperature=1.0']);
      const b = await evaluate(MODEL, 'gsm8k', ['temperature=1.0', 'chunk_size=3', 'concurrency=1']);
      const c = await evaluate(MODEL, 'gsm8k', ['temperature=1.0', 'seed=5']);
      expect(b.file.examples).toEqual(a.file.examples);
      expect(c.file.examples.map((e) => e.response)).not.toEqual(a.file.examples.map((e) => e.response));
    });
  });

  it('evaluates a tinker:// checkpoint: its base model from weights_info, sampled from its own weights', async () => {
    const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test', env: {} });
    try {
      const s = await backend.createTrainingSession({ baseModel: MODEL, lora: { rank: 4, seed: 3 } });
      const checkpoint = (await (await s.saveWeightsForSampler('eval-me', { seqId: 1 })).result()).path;
      await withWorker(stack, async () => {
        const { result, file } = await evaluate(checkpoint, 'mmlu', ['limit=3']);
        expect(result.numExamples).toBe(3);
        expect(file.model).toBe(checkpoint);
        expect(file.base_model).toBe(MODEL);
        expect(file.examples).toHaveLength(3);
      });
    } finally {
      await backend.close();
    }
  });

  // test/fixtures/ifbench_skip: the shipped IFBench rows with one asking for words:start_verb (no POS tagger weights here) at line 3.
  it('a row the port cannot check is skipped, not sampled: out of the score, num_skipped and the row with why in results.json and results.md', async () => {
    const data = join(import.meta.dirname, '..', 'fixtures', 'ifbench_skip');
    await withWorker(stack, async () => {
      const { result, file } = await evaluate(MODEL, 'ifbench', [`data_path=${data}`]);
      const { items, skipped } = await loadBenchmark({ suite: 'ifbench', data_path: data, data_name: null, data_split: null, limit: null, system_prompt: null });
      expect(skipped.map((s) => s.at)).toEqual([`${join(data, 'train.jsonl')}:3`]);
      expect(file.skipped).toEqual(skipped);
      expect(file.examples.map((e) => e.id)).toEqual(items.map((i) => i.id));
      expect(result.numExamples).toBe(4);
      expect(result.metrics).toEqual({ ...aggregateResults(SUITES.ifbench!, file.examples), num_skipped: 1 });
      const md = readFileSync(join(result.logPath, 'results.md'), 'utf8');
      expect(md).toContain('PARTIAL: 1 of 5 rows skipped');
      expect(md).toContain(`- SKIPPED ${skipped[0]!.id} (${skipped[0]!.at}): instruction "words:start_verb"`);
      expect(result.table).toBe(md.trimEnd());
    });
  });
});
