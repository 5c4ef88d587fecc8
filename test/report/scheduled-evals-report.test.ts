// The report's scheduled-evals section from files alone: scores placed at the step each checkpoint
// trained to (next_step − 1; batch only for rows that predate next_step), evals without a
// results.json (running, failed) and checkpoints the run no longer lists left out, several runs
// overlaid on one curve per benchmark; a score with rows skipped starred, with its note.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scheduledEvalDir } from '../../src/cookbook/eval/scheduled.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { loadRun } from '../../src/report/load.js';
import { loadScheduledEvals, renderScheduledEvalsSection } from '../../src/report/scheduled-evals.js';

const root = mkdtempSync(join(tmpdir(), 'h56e-report-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function trainingRun(name: string, rows: Array<Record<string, unknown> & { name: string }>): string {
  const dir = join(root, name);
  const store = new RunStore(dir);
  store.init({ workflowId: name, kind: 'sl', config: { model_name: 'tiny-qwen3' } }, new Set());
  for (const row of rows) store.writeCheckpoint(row);
  store.writeMetrics({ step: 0, loss: 1 });
  return dir;
}

function evaluated(dir: string, checkpoint: string, suite: string, model: string, score: number | null, skipped = 0): void {
  const evalDir = scheduledEvalDir(dir, checkpoint, suite);
  mkdirSync(evalDir, { recursive: true });
  if (score === null) return; // claimed, not finished
  writeFileSync(join(evalDir, 'results.json'), JSON.stringify({ format: 'eval_results/v1', suite, model, metrics: { score, num_correct: 0, num_examples: 4, ...(skipped ? { num_skipped: skipped } : {}) }, examples: [] }));
}

describe('scheduled evals in the report', () => {
  it('places each score at its checkpoint step and leaves out what is not finished or not listed', async () => {
    const a = trainingRun('run-a', [
      { name: '000004', batch: 1, epoch: 1, next_step: 5, sampler_path: 'tinker://a/sampler_weights/000004' },
      { name: 'final', batch: 0, epoch: 2, next_step: 7, sampler_path: 'tinker://a/sampler_weights/final' },
      { name: 'old', batch: 2, sampler_path: 'tinker://a/sampler_weights/old' },
    ]);
    evaluated(a, '000004', 'gsm8k', 'tinker://a/sampler_weights/000004', 0.25);
    evaluated(a, '000004', 'mmlu', 'tinker://a/sampler_weights/000004', 0.5);
    evaluated(a, 'final', 'gsm8k', 'tinker://a/sampler_weights/final', 0.75);
    evaluated(a, 'final', 'mmlu', 'tinker://a/sampler_weights/final', null);
    evaluated(a, 'old', 'gsm8k', 'tinker://a/sampler_weights/old', 0.125);
    evaluated(a, 'gone', 'gsm8k', 'tinker://a/sampler_weights/gone', 1);
    expect(loadScheduledEvals(loadRun(a)).map((p) => [p.checkpoint, p.step, p.benchmark, p.score])).toEqual([
      ['old', 2, 'gsm8k', 0.125],
      ['000004', 4, 'gsm8k', 0.25],
      ['000004', 4, 'mmlu', 0.5],
      ['final', 6, 'gsm8k', 0.75],
    ]);

    const b = trainingRun('run-b', [{ name: '000002', batch: 2, epoch: 0, next_step: 3, sampler_path: 'tinker://b/sampler_weights/000002' }]);
    evaluated(b, '000002', 'gsm8k', 'tinker://b/sampler_weights/000002', 1);
    const html = await renderScheduledEvalsSection([loadRun(a), loadRun(b)]);
    expect(html).toContain('<h2 id="scheduled-evals">Scheduled evals</h2>');
    expect([...html.matchAll(/data-key="([^"]+)"/g)].map((m) => m[1])).toEqual(['scheduled_eval/gsm8k/score', 'scheduled_eval/mmlu/score']);
    // Both runs in the legend of the shared curves, and a table each.
    expect(html).toContain('run-a');
    expect(html).toContain('run-b');
    expect(html).toContain('<td>final</td><td class="num">6</td><td class="num">0.75</td><td>–</td>');

    expect(html).not.toContain('not comparable');

    expect(await renderScheduledEvalsSection([loadRun(trainingRun('run-c', []))])).toBe('');
  });

  it('stars a score with rows skipped (IFBench rows this port cannot check) and says it is not comparable', async () => {
    const d = trainingRun('run-d', [{ name: '000002', batch: 2, epoch: 0, next_step: 3, sampler_path: 'tinker://d/sampler_weights/000002' }]);
    evaluated(d, '000002', 'ifbench', 'tinker://d/sampler_weights/000002', 0.25, 1);
    evaluated(d, '000002', 'gsm8k', 'tinker://d/sampler_weights/000002', 0.5);
    expect(loadScheduledEvals(loadRun(d)).map((p) => [p.benchmark, p.numSkipped])).toEqual([
      ['gsm8k', 0],
      ['ifbench', 1],
    ]);
    const html = await renderScheduledEvalsSection([loadRun(d)]);
    expect(html).toContain('<td>000002</td><td class="num">2</td><td class="num">0.5</td><td>0.25*</td>');
    expect(html).toContain('not comparable with a published full-set score');
  });
});
