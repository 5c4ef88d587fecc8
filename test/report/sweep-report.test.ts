// `cookbook report` on a sweep's log dir, offline: the points' curves overlaid (one colour per
// point) and the results table ranked by the sweep's metric, with a point still running and one
// pending. The real-stack sweep test renders the report of a real sweep too.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunStore, writeFileAtomic } from '../../src/cookbook/run-store.js';
import { POINTS_DIR, type PointRecord } from '../../src/cookbook/sweep-results.js';
import { expandPoints } from '../../src/cookbook/config/sweep-points.js';
import { loadRuns } from '../../src/report/load.js';
import { buildReportHtml } from '../../src/report/report.js';
import { slRun, tempDir } from './fixture.js';

function sweepDir(): { dir: string; names: string[] } {
  const dir = tempDir('cookbook-sweep-report-');
  const config = { kind: 'sl', grid: { learning_rate: [0.01, 0.02, 0.04, 0.08] }, metric: 'test/nll', mode: 'min', max_runs: null, model_name: 'tiny-qwen3', base: {} };
  new RunStore(dir).init({ workflowId: 'sweep-fx', kind: 'sweep', config: { ...config, log_path: dir } }, new Set());
  const names = expandPoints(config).map((p) => p.name);
  // Points 0 and 1 finished (1 better), point 2 still training, point 3 not started.
  [1, 0.5, 0.8].forEach((scale, i) => slRun(join(dir, names[i]), `sweep-fx/${names[i]}`, 6, scale));
  for (const i of [0, 1]) {
    const metrics = { 'test/nll': [1, 0.5][i] * (3.2 - 4 * 0.25), train_mean_nll: 1 };
    const record: PointRecord = { index: i, name: names[i], workflow_id: `sweep-fx/${names[i]}`, log_path: join(dir, names[i]), params: { learning_rate: [0.01, 0.02][i] }, status: 'completed', steps: 6, metrics };
    writeFileAtomic(join(dir, POINTS_DIR, `${names[i]}.json`), JSON.stringify(record));
  }
  return { dir, names };
}

describe('cookbook report: sweep', () => {
  it('loads the started points as runs, labelled by their workflow ids', () => {
    const { dir, names } = sweepDir();
    expect(loadRuns(dir).map((r) => r.label)).toEqual(names.slice(0, 3).map((n) => `sweep-fx/${n}`));
  });

  it('overlays the points and ranks them by the metric, best marked, running and pending last', async () => {
    const { dir, names } = sweepDir();
    const html = await buildReportHtml([dir]);
    expect(html).toContain('<a href="#sweep">sweep results</a>');
    const table = html.slice(html.indexOf('<table class="sweep-results">'), html.indexOf('</table>', html.indexOf('<table class="sweep-results">')));
    const order = [...table.matchAll(/<tr(?: class="best")?><td>★?<\/td><td>(?:<span[^>]*><\/span>)?([^<]+)</g)].map((m) => m[1]);
    // test/nll: point 1 → 1.1, point 2 (still training: its value so far, never best) → 1.76,
    // point 0 → 2.2, point 3 pending (no value) last.
    expect(order).toEqual([names[1], names[2], names[0], names[3]]);
    expect(table).toMatch(new RegExp(`<tr class="best"><td>★</td><td><span[^>]*></span>${names[1].replace(/\./g, '\\.')}<`));
    expect(table).toContain('>running<');
    expect(table).toContain('>pending<');
    expect(html).toContain('(2/4 points finished)');
    // One chart per key with every started point in its legend.
    const nll = html.match(/<figure class="chart" data-key="test\/nll">([\s\S]*?)<\/figure>/)![1];
    for (const n of names.slice(0, 3)) expect(nll).toContain(`>sweep-fx/${n}</text>`);
  });

  it('a pipeline sweep: the metric stage curves overlaid and ranked; a point still in an earlier stage is running with no value', async () => {
    const dir = tempDir('cookbook-sweep-pipeline-report-');
    const base = { model_name: 'tiny-qwen3', stages: [{ kind: 'sl', config: {} }, { kind: 'dpo', config: {} }] };
    const config = { kind: 'pipeline', grid: { 'stages.1.learning_rate': [0.01, 0.02, 0.04] }, metric: 'test/nll', mode: 'min', max_runs: null, metric_stage: null, model_name: 'tiny-qwen3', base };
    new RunStore(dir).init({ workflowId: 'psweep', kind: 'sweep', config: { ...config, log_path: dir } }, new Set());
    const names = expandPoints(config).map((p) => p.name);
    // Point 0 finished both stages, point 1 is in its SFT stage, point 2 not started.
    for (const i of [0, 1]) new RunStore(join(dir, names[i])).init({ workflowId: `psweep/${names[i]}`, kind: 'pipeline', config: { ...base, log_path: join(dir, names[i]) } }, new Set());
    slRun(join(dir, names[0], '0-sl'), `psweep/${names[0]}/0-sl`, 6, 1);
    slRun(join(dir, names[0], '1-dpo'), `psweep/${names[0]}/1-dpo`, 6, 0.5);
    slRun(join(dir, names[1], '0-sl'), `psweep/${names[1]}/0-sl`, 6, 1);
    const record: PointRecord = { index: 0, name: names[0], workflow_id: `psweep/${names[0]}`, log_path: join(dir, names[0]), metrics_log_path: join(dir, names[0], '1-dpo'), params: { 'stages.1.learning_rate': 0.01 }, status: 'completed', steps: 2, metrics: { 'test/nll': 0.55 } };
    writeFileAtomic(join(dir, POINTS_DIR, `${names[0]}.json`), JSON.stringify(record));

    expect(loadRuns(dir).map((r) => r.label)).toEqual([`psweep/${names[0]}/1-dpo`]);
    const html = await buildReportHtml([dir]);
    const table = html.slice(html.indexOf('<table class="sweep-results">'), html.indexOf('</table>', html.indexOf('<table class="sweep-results">')));
    const rows = [...table.matchAll(/<tr(?: class="best")?>([\s\S]*?)<\/tr>/g)].map((m) => m[1].replace(/<[^>]+>/g, '|').replace(/\|+/g, '|'));
    expect(rows).toEqual(['|point|stages.1.learning_rate|status|steps|test/nll (min)|', `|★|${names[0]}|0.01|completed|2|0.55|`, `|${names[1]}|0.02|running|–|–|`, `|${names[2]}|0.04|pending|–|–|`]);
  });
});
