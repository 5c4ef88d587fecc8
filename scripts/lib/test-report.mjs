// Where a test run's time went, per file: vitest's JSON report (each file's start and end), the
// engine suite's JUnit XML (each test's time, summed per file), the spans the test helpers time
// (test/support/timing.ts: stack, engine, Temporal and worker start-ups, waits on events, chaos
// baselines and trials). Prints the slowest files with those spans beside their totals and writes
// every file's figures as JSON.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';

/** The span categories, in the order the table shows them (test/support/timing.ts names them). */
const CATEGORIES = ['import and collect', 'stack start', 'engine start', 's3 start', 'temporal start', 'worker start', 'waits', 'chaos baseline', 'chaos trials'];

/**
 * @param {{ root: string, vitestJson?: string, engineXml?: string, timings?: string }} inputs
 * @returns {Array<{ file: string, suite: 'vitest' | 'pytest', seconds: number, tests: number, spans: Record<string, number> }>}
 */
export function fileDurations({ root, vitestJson, engineXml, timings }) {
  const files = [];
  if (vitestJson && existsSync(vitestJson)) {
    const report = JSON.parse(readFileSync(vitestJson, 'utf8'));
    const spans = spansByFile(timings, root);
    // Files run side by side in a few worker processes, each file after the one before it in its
    // process. The report does not say which process ran a file, so the lanes are rebuilt: a file
    // follows the lane that ended last at or before its start. Its time starts where that lane's
    // previous file ended: what comes before vitest's startTime for it is its import and collection
    // and its top-level beforeAll hooks; the hooks' timed spans are taken out of the import's share.
    const lanes = []; // each lane's last end
    for (const r of [...(report.testResults ?? [])].sort((a, b) => a.startTime - b.startTime)) {
      const file = relative(root, r.name);
      const free = lanes.map((end, i) => ({ end, i })).filter((l) => l.end <= r.startTime).sort((a, b) => b.end - a.end)[0];
      const began = free ? free.end : Math.min(r.startTime, report.startTime ?? r.startTime);
      if (free) lanes[free.i] = r.endTime;
      else lanes.push(r.endTime);
      const { totals = {}, list = [] } = spans.get(file) ?? {};
      const fileSpans = { ...totals };
      const hooks = list.filter((sp) => sp.at !== undefined && sp.at >= began && sp.at < r.startTime).reduce((sum, sp) => sum + sp.ms, 0);
      const gap = r.startTime - began - hooks;
      if (gap > 0) fileSpans['import and collect'] = round(gap / 1000);
      files.push({ file, suite: 'vitest', seconds: round((r.endTime - began) / 1000), tests: r.assertionResults?.length ?? 0, spans: fileSpans });
    }
  }
  if (engineXml && existsSync(engineXml)) {
    const perFile = new Map();
    for (const m of readFileSync(engineXml, 'utf8').matchAll(/<testcase\b[^>]*?\bclassname="([^"]+)"[^>]*?\btime="([\d.]+)"/g)) {
      const file = `engine/${m[1].replace(/\.[A-Z]\w*$/, '').replaceAll('.', '/')}.py`;
      const entry = perFile.get(file) ?? { seconds: 0, tests: 0 };
      entry.seconds += Number(m[2]);
      entry.tests += 1;
      perFile.set(file, entry);
    }
    for (const [file, { seconds, tests }] of perFile) files.push({ file, suite: 'pytest', seconds: round(seconds), tests, spans: {} });
  }
  return files.sort((a, b) => b.seconds - a.seconds);
}

function spansByFile(timings, root) {
  const byFile = new Map();
  if (!timings || !existsSync(timings)) return byFile;
  for (const line of readFileSync(timings, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    let span;
    try {
      span = JSON.parse(line);
    } catch {
      continue; // a line cut short by a killed process
    }
    if (!span.file) continue;
    const file = relative(root, span.file);
    const entry = byFile.get(file) ?? { totals: {}, list: [] };
    entry.totals[span.category] = round((entry.totals[span.category] ?? 0) + span.ms / 1000);
    entry.list.push(span);
    byFile.set(file, entry);
  }
  return byFile;
}

/** The `n` slowest files as a plain-text table: total, the timed spans, and what they leave (the tests' own work). */
export function slowestTable(files, n = 15) {
  const shown = files.slice(0, n);
  const cols = CATEGORIES.filter((c) => shown.some((f) => f.spans[c]));
  const head = ['seconds', ...cols, 'rest', 'tests', 'file'];
  const rows = shown.map((f) => {
    const spent = cols.reduce((sum, c) => sum + (f.spans[c] ?? 0), 0);
    return [f.seconds.toFixed(0), ...cols.map((c) => (f.spans[c] ? f.spans[c].toFixed(0) : '')), (f.seconds - spent).toFixed(0), String(f.tests), f.file];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padStart(widths[i]))).join('  ');
  const total = files.reduce((sum, f) => sum + f.seconds, 0);
  return [`${n} slowest test files (of ${files.length}, ${total.toFixed(0)} s in all; spans in seconds, a span inside another counted once):`, line(head), ...rows.map(line)].join('\n');
}

export function writeDurations(path, files) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify({ written: new Date().toISOString(), files }, null, 2)}\n`);
}

const round = (x) => Math.round(x * 10) / 10;
