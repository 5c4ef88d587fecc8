// The `runs` table, fit to a terminal's width: a model path is shortened from its start (its name is
// at the end), then a long workflow id in its middle (its kind and name lead, its timestamp ends it).

export interface RunRow {
  id: string;
  kind: string;
  model: string;
  step: string;
  /** The run's own status (search attribute). */
  status: string;
  /** Temporal's status of the execution (RUNNING, COMPLETED, TERMINATED, …). */
  temporal: string;
}

const SETTLED: Record<string, string[]> = {
  RUNNING: ['starting', 'running', 'paused', 'recovering', 'stopping'],
  COMPLETED: ['completed', 'stopped'],
  FAILED: ['failed'],
};

/** The run's own status, or Temporal's where that tells something else (`terminated (was running)`). */
export function statusCell(status: string, temporal: string): string {
  const closed = temporal.toLowerCase().replace(/_/g, ' ');
  if (!status) return closed;
  return SETTLED[temporal]?.includes(status) ? status : `${closed} (was ${status})`;
}

export const elideMiddle = (s: string, n: number): string => {
  if (s.length <= n) return s;
  const head = Math.ceil((n - 1) / 2);
  return `${s.slice(0, head)}…${s.slice(s.length - (n - 1 - head))}`;
};

export const elideStart = (s: string, n: number): string => (s.length <= n ? s : `…${s.slice(s.length - (n - 1))}`);

const GAP = 2;
const MIN_MODEL = 16;
const MIN_ID = 24;

/** The table's lines, at most `width` columns where the ids allow it; `elided`: some id was shortened. */
export function runsTable(runs: RunRow[], width = 120): { lines: string[]; elided: boolean } {
  const header = ['WORKFLOW ID', 'KIND', 'MODEL', 'STEP', 'STATUS'];
  const cells = runs.map((r) => [r.id, r.kind, r.model, r.step, statusCell(r.status, r.temporal)]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  // The last column is not padded, so it counts as it is.
  let over = widths.reduce((a, b) => a + b, 0) + GAP * (widths.length - 1) - width;
  const modelCut = Math.max(0, Math.min(over, widths[2] - MIN_MODEL));
  widths[2] -= modelCut;
  over -= modelCut;
  const idCut = Math.max(0, Math.min(over, widths[0] - MIN_ID));
  widths[0] -= idCut;
  const elided = cells.some((c) => c[0].length > widths[0]);
  const fit = (c: string[]) => [elideMiddle(c[0], widths[0]), c[1], elideStart(c[2], widths[2]), c[3], c[4]];
  const lines = [header, ...cells.map(fit)].map((r) => r.map((c, i) => c.padEnd(widths[i])).join(' '.repeat(GAP)).trimEnd());
  return { lines, elided };
}
