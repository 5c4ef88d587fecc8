// `cookbook report` on real runs of every kind on the real stack (Temporal dev server, engine over
// HTTP, tiny-qwen3): SL (named by workflow id: its log dir comes from the run's memo) and RL (by log
// dir; the RL activities' rollout records feed the browser), then DPO, on-policy distillation and an
// SFT → DPO pipeline (shown as its stages). The same runs show each paradigm's timing: `time/*` in
// every step's row under the reference's span names, timing_spans.jsonl once per step, the report's
// timing panel and Gantt charts, and `--trace` as a Chrome trace-event file.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logDirOf } from '../../src/cli/runs.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { writeReport } from '../../src/report/report.js';
import { writeTrace, type ChromeTrace } from '../../src/report/trace.js';
import { timingProblems } from '../support/runs.js';
import { runToEnd, startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');
const stepsOf = (logPath: string) => new RunStore(logPath).readMetrics().map((r) => r.step as number);
/** Keys of a run's rows, all together. */
const keysOf = (logPath: string) => new Set(new RunStore(logPath).readMetrics().flatMap((r) => Object.keys(r)));

describe('report of real runs', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('charts every metric of an SL and an RL run and browses the RL rollouts', async () => {
    const sl = testRun(stack, join(fixtures, 'sl_small.json'));
    const rl = testRun(stack, join(fixtures, 'rl_small.json'), [], 'rl');
    await withWorker(stack, () => Promise.all([runToEnd(stack, sl), runToEnd(stack, rl)]));

    // One record per RL step, pointing at blobs that exist, advantages centred within each group.
    const records = new RunStore(rl.run.logPath).readRolloutRecords();
    expect(records.map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5]);
    for (const record of records) {
      expect(record.groups).toHaveLength(3);
      for (const g of record.groups) {
        expect(existsSync(join(rl.run.logPath, '.cookbook', 'store', g.ref))).toBe(true);
        if (g.advantages) expect(Math.abs(g.advantages.reduce((a, b) => a + b, 0))).toBeLessThan(1e-5);
      }
    }

    const lookup = (id: string) => logDirOf(stack.client, id);
    await expect(writeReport(['no-such-run'], { lookup })).rejects.toThrow(/as a workflow id: no run with workflow id "no-such-run"/);
    const out = await writeReport([sl.workflowId, rl.run.logPath], { lookup });
    expect(out).toBe(join(sl.run.logPath, 'report.html'));
    const html = readFileSync(out, 'utf8');
    const numericKeys = new Set(
      [sl, rl].flatMap((r) => new RunStore(r.run.logPath).readMetrics().flatMap((row) => Object.keys(row).filter((k) => k !== 'step' && typeof row[k] === 'number'))),
    );
    const charted = [...html.matchAll(/<figure class="chart" data-key="([^"]+)">/g)].map((m) => m[1]);
    expect(new Set(charted)).toEqual(numericKeys);
    expect(charted).toHaveLength(numericKeys.size);
    for (const key of ['train_mean_nll', 'test/nll', 'env/all/reward/total', 'optim/kl_sample_train_v1']) expect(charted).toContain(key);
    expect(html).toContain(`>${sl.workflowId}</text>`); // the overlay legend
    expect(html).toContain(`>${rl.workflowId}</text>`);
    expect(html.match(/class="iteration" data-step="\d+"/g)).toHaveLength(6);
    expect(html).toContain('&lt;|im_start|&gt;user\n'); // prompts decoded with tiny-qwen3's tokenizer
    expect(html).toContain('<td>000003</td>'); // checkpoints table

    // Timing: the reference's span names per loop (SL without time/total), once per step.
    expect(timingProblems(sl.run.logPath, stepsOf(sl.run.logPath), { total: false })).toEqual([]);
    expect(timingProblems(rl.run.logPath, [0, 1, 2, 3, 4, 5], { total: true })).toEqual([]);
    for (const key of ['time/get_batch', 'time/submit_batch', 'time/step', 'time/finish_batch', 'time/evals', 'time/queue_wait:count', 'time/backend_wait:total']) expect(keysOf(sl.run.logPath)).toContain(key);
    for (const key of ['time/sampling', 'time/policy_sample:count', 'time/do_group_rollout_and_filter_constant_reward:max', 'time/train_step', 'time/save_checkpoint', 'time/total']) {
      expect(keysOf(rl.run.logPath)).toContain(key);
    }
    for (const run of [sl, rl]) {
      expect(html).toMatch(new RegExp(`<figure class="timing-panel" data-run="${run.workflowId}"><svg`));
    }
    expect(html.match(/<details class="gantt" id="gantt-1-\d+" data-step="\d+">/g)?.length).toBeGreaterThan(0);
    expect(html).toMatch(/<rect class="span" data-name="policy_sample"/);

    // --trace: every step of both runs on one timeline, in the Chrome trace-event format Perfetto loads.
    const traceFile = join(sl.run.logPath, 'trace.json');
    const spans = await writeTrace([sl.run.logPath, rl.run.logPath], traceFile);
    const trace = JSON.parse(readFileSync(traceFile, 'utf8')) as ChromeTrace;
    const complete = trace.traceEvents.filter((e) => e.ph === 'X');
    expect(complete).toHaveLength(spans);
    for (const e of complete) expect(Object.keys(e)).toEqual(expect.arrayContaining(['name', 'ph', 'ts', 'dur', 'pid', 'tid']));
    expect(new Set(complete.filter((e) => e.name.startsWith('step ')).map((e) => `${e.args.run} ${e.args.step}`)).size).toBe(stepsOf(sl.run.logPath).length + 6);
    expect(trace.traceEvents.some((e) => e.ph === 'M' && e.name === 'process_name' && /worker \d+@/.test(String(e.args.name)))).toBe(true);
  });
  it('reports DPO, distillation (with its rollout browser) and pipeline runs', async () => {
    const dpo = testRun(stack, join(fixtures, 'dpo_small.json'), [], 'dpo');
    const distill = testRun(stack, join(fixtures, 'distill_small.json'), ['save_every=0'], 'distill');
    const pipeline = testRun(stack, join(fixtures, 'pipeline_small.json'), [], 'pipeline');
    await withWorker(stack, () => Promise.all([runToEnd(stack, dpo), runToEnd(stack, distill), runToEnd(stack, pipeline)]));

    const html = readFileSync(await writeReport([dpo.run.logPath, distill.run.logPath, pipeline.run.logPath]), 'utf8');
    const charted = new Set([...html.matchAll(/<figure class="chart" data-key="([^"]+)">/g)].map((m) => m[1]));
    for (const key of ['dpo_loss', 'accuracy', 'teacher_kl', 'optim/entropy', 'train_mean_nll']) expect(charted).toContain(key);
    // Each stage of the pipeline is a run of its own in the overlay.
    expect(html).toContain(`>${pipeline.workflowId}/0-sl</text>`);
    expect(html).toContain(`>${pipeline.workflowId}/1-dpo</text>`);
    expect(html).toContain(`>${dpo.workflowId}</text>`);
    // The distillation rollouts: one iteration per step, prompts decoded.
    expect(new RunStore(distill.run.logPath).readRolloutRecords().length).toBeGreaterThan(0);
    expect(html).toMatch(/class="iteration" data-step="0"/);

    // Timing of each kind (a pipeline's stages as their kinds), and its panel in the report.
    const [slStage, dpoStage] = ['0-sl', '1-dpo'].map((stage) => join(pipeline.run.logPath, stage));
    for (const [dir, total] of [[dpo.run.logPath, true], [distill.run.logPath, true], [slStage, false], [dpoStage, true]] as const) {
      expect(timingProblems(dir, stepsOf(dir), { total }), dir).toEqual([]);
    }
    for (const row of new RunStore(dpo.run.logPath).readMetrics()) expect(row.batch_time).toBe(row['time/total']);
    for (const key of ['time/get_batch', 'time/get_ref_logprobs', 'time/step']) expect(keysOf(dpo.run.logPath)).toContain(key);
    for (const key of ['time/sample', 'time/train', 'time/compute_kl_penalty', 'time/train_step']) expect(keysOf(distill.run.logPath)).toContain(key);
    expect(html.match(/<figure class="timing-panel" data-run="[^"]+"><svg/g)).toHaveLength(4);
  });
});
