// `cookbook report`: runs in, one HTML page out (load → charts → rollouts → html).
import { basename, dirname, join, resolve } from 'node:path';
import { writeFileAtomic } from '../cookbook/run-store.js';
import { metricGroups, renderCharts, runColor } from './charts.js';
import { renderHtml } from './html.js';
import { loadRun, loadRuns, ReportError, requireMetrics, type RunData } from './load.js';
import { resolveTarget, type LogDirLookup } from './resolve.js';
import { DEFAULT_MAX_ITERATIONS, loadRollouts } from './rollouts.js';
import { isSweepRun, loadSweepTable, renderSweepSection } from './sweep.js';
import { renderTimingSection } from './timing.js';
import { loadTtsReport, renderTtsSection } from './tts.js';
import { renderScheduledEvalsSection } from './scheduled-evals.js';

export interface ReportOptions {
  /** Looks up workflow ids that name no directory (the CLI asks Temporal). */
  lookup?: LogDirLookup;
  /** Rollout iterations shown per run (evenly spaced when there are more). */
  rolloutIterations?: number;
  live?: { refreshSeconds: number };
}

export const DEFAULT_REPORT_NAME = 'report.html';

/** The log dirs of the targets, resolved once (a served report re-reads their files on each request). */
export async function resolveTargets(targets: readonly string[], lookup?: LogDirLookup): Promise<string[]> {
  if (targets.length === 0) throw new ReportError('report: give a workflow id or a log dir (several to compare runs)');
  const dirs: string[] = [];
  for (const t of targets) dirs.push(await resolveTarget(t, lookup));
  return dirs;
}

/** The results table of each target that is a sweep's log dir. */
function loadSweepTables(logDirs: readonly string[]) {
  return logDirs.map((dir) => loadRun(dir)).filter(isSweepRun).map(loadSweepTable);
}

function loadAll(logDirs: readonly string[]): RunData[] {
  const runs = logDirs.flatMap((dir) => loadRuns(dir));
  // Two runs of the same name (a log dir given twice, copies of one run) would share a legend entry.
  const seen = new Map<string, number>();
  for (const run of runs) {
    const n = (seen.get(run.label) ?? 0) + 1;
    seen.set(run.label, n);
    if (n > 1) run.label = `${run.label} (${n})`;
  }
  return runs;
}

/**
 * The page for these log dirs. With `allowEmpty` (a served report of a run that just started) a
 * run without metrics is a notice on the page instead of an error.
 */
export async function buildReportHtml(logDirs: readonly string[], opts: ReportOptions & { allowEmpty?: boolean } = {}): Promise<string> {
  const runs = loadAll(logDirs);
  let notice: string | undefined;
  const tts = runs.map(loadTtsReport);
  try {
    // A TTS run has results but no training metrics.
    requireMetrics(runs.filter((_, i) => tts[i] === null));
  } catch (err) {
    if (!opts.allowEmpty || !(err instanceof ReportError)) throw err;
    notice = err.message;
  }
  const groups = metricGroups(runs);
  const charts = await renderCharts(runs, groups);
  const rollouts = [];
  for (const run of runs) rollouts.push(await loadRollouts(run, opts.rolloutIterations ?? DEFAULT_MAX_ITERATIONS));
  const sweepSection = renderSweepSection(loadSweepTables(logDirs), (name) => {
    // A pipeline point's curves come from its metric stage's directory, `<point>/<i>-<kind>`.
    const i = runs.findIndex((r) => basename(r.logDir) === name || basename(dirname(r.logDir)) === name);
    return i === -1 ? undefined : runColor(i);
  });
  const timingSection = await renderTimingSection(runs);
  const scheduledEvalsSection = await renderScheduledEvalsSection(runs);
  return renderHtml({ runs, groups, charts, rollouts, generatedAt: new Date(), live: opts.live, notice, sweepSection: sweepSection || undefined, timingSection: timingSection || undefined, ttsSection: renderTtsSection(tts) || undefined, scheduledEvalsSection: scheduledEvalsSection || undefined });
}

/** Writes the report (by default `report.html` in the first run's log dir) and returns its path. */
export async function writeReport(targets: readonly string[], opts: ReportOptions & { out?: string } = {}): Promise<string> {
  const logDirs = await resolveTargets(targets, opts.lookup);
  const html = await buildReportHtml(logDirs, opts);
  const out = resolve(opts.out ?? join(logDirs[0], DEFAULT_REPORT_NAME));
  // Through a temp file: a browser reloading the page never reads half of it.
  writeFileAtomic(out, html);
  return out;
}
