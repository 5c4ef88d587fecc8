// The scheduled evals of a training run (`cookbook eval <run> --every …`) in its report: each
// benchmark's score as a curve over the steps of the checkpoints it was evaluated on, every run of
// the report overlaid, and a table of the scores per checkpoint. Read from the results.json files
// under <log dir>/evals/<checkpoint>/<benchmark>/; a checkpoint's step is the last step it trained
// (its row's next_step − 1).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { EvalResultsFile } from '../cookbook/eval/results.js';
import { checkpointStep, SCHEDULED_EVALS_DIR } from '../cookbook/eval/scheduled.js';
import { chartSpec, renderSvg } from './charts.js';
import { esc, fmt, table } from './html.js';
import type { RunData } from './load.js';

export interface ScheduledEvalPoint {
  checkpoint: string;
  step: number;
  benchmark: string;
  score: number;
  numExamples: number;
  /** Rows left out as ones the port cannot check (results.json's num_skipped): the score is then partial. */
  numSkipped: number;
  resultsPath: string;
}

const dirsIn = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((n) => statSync(join(dir, n)).isDirectory()).sort() : []);

/** The run's finished scheduled evals, by step then benchmark; those of a checkpoint without a step are left out. */
export function loadScheduledEvals(run: RunData): ScheduledEvalPoint[] {
  const root = join(run.logDir, SCHEDULED_EVALS_DIR);
  const stepOf = new Map<string, number>();
  for (const row of run.checkpoints) {
    const step = checkpointStep(row);
    if (step === null) continue;
    stepOf.set(row.name, step);
    if (typeof row.sampler_path === 'string') stepOf.set(row.sampler_path, step);
  }
  const points: ScheduledEvalPoint[] = [];
  for (const checkpoint of dirsIn(root)) {
    for (const benchmark of dirsIn(join(root, checkpoint))) {
      const resultsPath = join(root, checkpoint, benchmark, 'results.json');
      if (!existsSync(resultsPath)) continue; // still running, or failed
      let file: EvalResultsFile;
      try {
        file = JSON.parse(readFileSync(resultsPath, 'utf8')) as EvalResultsFile;
      } catch {
        continue; // being written by a crashed worker's successor: the next render has it
      }
      const step = stepOf.get(file.model) ?? stepOf.get(checkpoint);
      if (step === undefined || typeof file.metrics?.score !== 'number') continue;
      points.push({ checkpoint, step, benchmark: file.suite, score: file.metrics.score, numExamples: file.metrics.num_examples ?? 0, numSkipped: file.metrics.num_skipped ?? 0, resultsPath });
    }
  }
  return points.sort((a, b) => a.step - b.step || a.benchmark.localeCompare(b.benchmark));
}

const scoreKey = (benchmark: string) => `scheduled_eval/${benchmark}/score`;

export async function renderScheduledEvalsSection(runs: readonly RunData[]): Promise<string> {
  const perRun = runs.map(loadScheduledEvals);
  if (perRun.every((p) => p.length === 0)) return '';
  const benchmarks = [...new Set(perRun.flat().map((p) => p.benchmark))].sort();
  // The charts' own run shape: one metrics row per evaluated checkpoint step.
  const curves: RunData[] = runs.map((run, i) => ({
    ...run,
    metrics: [...new Set(perRun[i]!.map((p) => p.step))].map((step) => Object.fromEntries([['step', step], ...perRun[i]!.filter((p) => p.step === step).map((p) => [scoreKey(p.benchmark), p.score])])),
  }));
  const charts: string[] = [];
  for (const [n, b] of benchmarks.entries()) charts.push(`<figure class="chart" data-key="${esc(scoreKey(b))}">${await renderSvg(chartSpec(scoreKey(b), curves), `se${n}`)}</figure>`);
  const tables = runs
    .map((run, i) => {
      const points = perRun[i]!;
      if (points.length === 0) return '';
      const checkpoints = [...new Map(points.map((p) => [p.checkpoint, p.step])).entries()];
      // A score over part of the set (rows skipped) is starred: it is not comparable with a published one.
      const cell = (p: ScheduledEvalPoint | undefined) => (p === undefined ? '–' : p.numSkipped > 0 ? `${fmt(p.score)}*` : p.score);
      const rows = checkpoints.map(([name, step]) => [name, step, ...benchmarks.map((b) => cell(points.find((p) => p.checkpoint === name && p.benchmark === b)))]);
      const partial = points.some((p) => p.numSkipped > 0) ? '<p class="muted">* rows this port cannot check were skipped (listed in that eval\'s results.json): the score is over the rest and not comparable with a published full-set score.</p>' : '';
      return `<h3>${esc(run.label)}</h3>${table(['checkpoint', 'step', ...benchmarks], rows)}${partial}`;
    })
    .join('');
  const intro = `<p class="muted">Each benchmark's score on the run's sampler checkpoints, evaluated by an eval schedule (<code>cookbook eval &lt;run&gt; --every …</code>); results in &lt;log dir&gt;/${SCHEDULED_EVALS_DIR}/&lt;checkpoint&gt;/&lt;benchmark&gt;/results.json.</p>`;
  return `<h2 id="scheduled-evals">Scheduled evals</h2>${intro}<div class="charts">${charts.join('')}</div>${tables}`;
}
