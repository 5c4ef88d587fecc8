// `cookbook sweep <config.json> [key=value …]`: resolve the sweep (every point validated), start it,
// then follow it: a line per point as it finishes (plain lines, no TTY needed) and the final table
// ranked by the metric, best marked. Ctrl-C leaves the sweep running; `sweep watch <id>` follows it
// again, `sweep status <id>` prints the table so far. Stop/pause/resume are `cookbook stop|pause|resume`.
import { WorkflowNotFoundError, type Client, type WorkflowExecutionDescription, type WorkflowHandle } from '@temporalio/client';
import { ConfigError } from '../cookbook/config/overrides.js';
import { expandPoints } from '../cookbook/config/sweep-points.js';
import type { ForwardedSet, SetResult } from '../workflows/shared/messages.js';
import type { SweepProgress, SweepResult, SweepRow, SweepTable } from '../workflows/sweep.js';
import { checkBackend, checkRunData, resolveRun, startRun } from './train.js';
import { webUiLine } from './ui-link.js';
import { followRun } from './follow.js';
import { BUSY_QUERY_TIMEOUT_MS, lookAtRun, workerLine } from './liveness.js';

export const SWEEP_USAGE = `  sweep <config.json> [k=v …]         hyper-parameter sweep: grid/random points as child runs, ≤max_concurrent at once;
        [--set k=v …] [--detach] [--id ID]  prints each point as it finishes, then the table ranked by the metric
  sweep status <id> | sweep watch <id>  a sweep's results table so far / follow it again`;

const fmt = (v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? String(Number(v.toPrecision(6))) : typeof v === 'string' ? v : JSON.stringify(v));

/** One finished point: `[done/total] name status · steps · metric value`. */
export function pointLine(row: SweepRow, done: number, total: number, metric: string): string {
  const value = row.value === null ? `${metric} –` : `${metric} ${fmt(row.value)}`;
  const error = row.error ? ` · ${row.error}` : '';
  return `[${done}/${total}] ${row.name} ${row.status} · ${row.steps ?? 0} steps · ${value}${error}`;
}

/** Points ranked by the metric (mode), points without a value after them in index order; `*` marks the best. */
export function formatSweepTable(t: SweepTable): string {
  const sign = t.mode === 'min' ? 1 : -1;
  const rows = [...t.points].sort((a, b) => {
    if (a.value === null || b.value === null) return (a.value === null ? 1 : 0) - (b.value === null ? 1 : 0) || a.index - b.index;
    return sign * (a.value - b.value) || a.index - b.index;
  });
  const keys = [...new Set(t.points.flatMap((p) => Object.keys(p.params)))];
  const header = ['', 'point', ...keys, 'status', 'steps', t.metric];
  const cells = rows.map((r) => [r.index === t.best ? '*' : '', r.name, ...keys.map((k) => (k in r.params ? fmt(r.params[k]) : '')), r.status, r.steps === null ? '' : String(r.steps), r.value === null ? '–' : fmt(r.value)]);
  const widths = header.map((_, i) => Math.max(header[i].length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i])).join('  ').trimEnd();
  const best = t.best === undefined ? `no point has a finite ${t.metric} yet` : `best: ${t.points[t.best].name} (${t.metric} ${fmt(t.points[t.best].value)}, ${t.mode})`;
  return [line(header), ...cells.map(line), best].join('\n');
}

/**
 * What `cookbook set <id>` prints: the settings now in force, then — for a sweep or a pipeline —
 * each run the settings were forwarded to (nested: a pipeline point's running stage).
 */
export function formatSetResult(id: string, r: SetResult): string {
  if (!r.forwarded) return `${id}: hot settings now ${JSON.stringify(r.settings)}, from step ${r.fromStep}`;
  const lines = [`${id}: hot settings now ${JSON.stringify(r.settings)}`];
  const walk = (list: ForwardedSet[], depth: number) => {
    for (const f of list) {
      lines.push(`${'  '.repeat(depth)}→ ${f.workflowId}: ${f.fromStep === null ? 'already ended, unchanged' : f.forwarded ? 'forwarded' : `from step ${f.fromStep}`}`);
      if (f.forwarded) walk(f.forwarded, depth + 1);
    }
  };
  walk(r.forwarded, 1);
  if (r.forwarded.length === 0) lines.push('  (no run going now)');
  return lines.join('\n');
}

const isFinished = (r: SweepRow) => r.status !== 'pending' && r.status !== 'running';

/** Prints each point as it finishes until the sweep closes (with followRun's notes); returns its result (throws if it failed). */
export async function followSweep(client: Client, id: string, print: (line: string) => void = console.log, pollMs = 1000): Promise<SweepResult> {
  const printed = new Set<number>();
  const report = (t: SweepTable) => {
    const total = t.points.length;
    for (const row of t.points) {
      if (!isFinished(row) || printed.has(row.index)) continue;
      printed.add(row.index);
      print(pointLine(row, printed.size, total, t.metric));
    }
  };
  const final = await followRun<SweepResult>(client, client.workflow.getHandle(id), {
    onProgress: (p) => report(p as unknown as SweepProgress),
    note: print,
    pollMs,
  });
  report(final);
  return final;
}

/** The sweep's description, or a clear error for an id that names no sweep. */
async function describeSweep(client: Client, id: string): Promise<{ handle: WorkflowHandle; desc: WorkflowExecutionDescription }> {
  const handle = client.workflow.getHandle(id);
  let desc;
  try {
    desc = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new Error(`no sweep with workflow id "${id}" (see \`npx cookbook runs\`)`);
    throw err;
  }
  if (desc.type !== 'sweepWorkflow') throw new ConfigError(`${id} is a ${desc.type}, not a sweep`);
  return { handle, desc };
}

async function sweepTable(client: Client, id: string): Promise<{ table: SweepTable; state: string }> {
  const { handle, desc } = await describeSweep(client, id);
  if (desc.status.name === 'COMPLETED') return { table: (await handle.result()) as SweepResult, state: 'COMPLETED' };
  const look = await lookAtRun(client, handle, { busyTimeoutMs: BUSY_QUERY_TIMEOUT_MS });
  if (!look.progress) throw new Error(`${id} is ${desc.status.name}; its table needs a worker: ${workerLine(look.worker)}`);
  const p = look.progress as unknown as SweepProgress;
  return { table: p, state: `${desc.status.name} · ${p.status}${p.paused ? ' (paused)' : ''}${p.stopRequested ? ' (stop requested)' : ''} · ${p.step}/${p.totalSteps} points done · log dir ${p.logPath}` };
}

export interface SweepCommandOptions {
  detach: boolean;
  workflowId?: string;
  engineUrl: string;
  taskQueue?: string;
  connect(): Promise<Client>;
}

export async function sweepCommand(args: string[], opts: SweepCommandOptions): Promise<number> {
  const [first, ...rest] = args;
  if (!first) throw new ConfigError('sweep: usage `cookbook sweep <config.json> [key=value …]`, `cookbook sweep status <id>` or `cookbook sweep watch <id>`');
  if ((first === 'status' || first === 'watch') && rest.length === 1 && !rest[0].includes('=')) {
    const client = await opts.connect();
    if (first === 'status') {
      const { table, state } = await sweepTable(client, rest[0]);
      console.log(`${rest[0]}: ${state}\n${formatSweepTable(table)}`);
      return 0;
    }
    // Only the id is checked first: a sweep without a worker that answers now is followed (with a
    // note that says so, as `watch` prints one), not refused.
    await describeSweep(client, rest[0]);
    console.log(formatSweepTable(await followSweep(client, rest[0])));
    return 0;
  }
  const resolved = resolveRun('sweep', first, rest, { workflowId: opts.workflowId });
  const cfg = resolved.config;
  await checkBackend(cfg.base.base_url ?? opts.engineUrl, cfg.model_name);
  await checkRunData(resolved);
  const points = expandPoints(cfg);
  console.log(`sweep of ${cfg.kind} on ${cfg.model_name}: ${points.length} points, ≤${cfg.max_concurrent} at once, ranked by ${cfg.metric} (${cfg.mode})`);
  for (const p of points) console.log(`  ${p.name}`);
  const client = await opts.connect();
  await startRun(client, resolved, opts.taskQueue);
  console.log(`started ${resolved.workflowId}`);
  console.log(`log dir  ${resolved.run.logPath}`);
  console.log(webUiLine(client, resolved.workflowId));
  if (opts.detach) return 0;
  console.log('following (Ctrl-C leaves it running; `cookbook sweep watch <id>` follows it again)');
  const result = await followSweep(client, resolved.workflowId);
  console.log(`\n${result.status}\n${formatSweepTable(result)}`);
  return 0;
}
