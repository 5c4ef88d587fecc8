// `cookbook report --trace FILE`: a run's timing spans as a Chrome trace-event file (the JSON object
// format, complete `X` events), which Perfetto (ui.perfetto.dev) and chrome://tracing load. A
// process per worker, a thread per activity lane, so every step's spans land on one timeline; a
// `steps` process holds each step's extent and the spans several activities made together.
import { basename } from 'node:path';
import { writeFileAtomic } from '../cookbook/run-store.js';
import { loadRuns, ReportError, type RunData } from './load.js';
import { resolveTargets, type ReportOptions } from './report.js';
import { loadTiming } from './timing.js';

export interface TraceEvent {
  name: string;
  cat?: string;
  ph: 'X' | 'M';
  /** Microseconds from the earliest span of the trace. */
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  args: Record<string, unknown>;
}

export interface ChromeTrace {
  traceEvents: TraceEvent[];
  displayTimeUnit: 'ms';
  otherData: Record<string, string>;
}

const US = 1e6;

/** The trace of these runs' timing rows (every step). */
export function buildTrace(runs: readonly RunData[]): ChromeTrace {
  const timed = runs.map(loadTiming).filter((t) => t.rows.length > 0);
  if (timed.length === 0) throw new ReportError(`no timing spans to trace: ${runs.map((r) => r.logDir).join(', ')} ${runs.length === 1 ? 'has' : 'have'} no timing_spans.jsonl rows`);
  const origin = Math.min(...timed.flatMap((t) => t.rows.map((r) => r.wall_origin ?? 0)));
  const events: TraceEvent[] = [];
  const pids = new Map<string, number>();
  const tids = new Map<string, number>();
  const pid = (name: string) => {
    if (!pids.has(name)) {
      pids.set(name, pids.size + 1);
      events.push({ name: 'process_name', ph: 'M', ts: 0, pid: pids.get(name)!, tid: 0, args: { name } });
    }
    return pids.get(name)!;
  };
  const tid = (p: number, name: string) => {
    const key = `${p}\u0000${name}`;
    if (!tids.has(key)) {
      tids.set(key, tids.size + 1);
      events.push({ name: 'thread_name', ph: 'M', ts: 0, pid: p, tid: tids.get(key)!, args: { name } });
    }
    return tids.get(key)!;
  };
  const many = timed.length > 1;
  for (const { run, rows } of timed) {
    const prefix = many ? `${run.label}: ` : '';
    const steps = pid(`${prefix}steps`);
    for (const row of rows) {
      // Rows of older runs without an origin are placed from 0 (each on its own, not on one timeline).
      const base = ((row.wall_origin ?? origin) - origin) * US;
      const end = Math.max(0, ...row.spans.map((s) => s.wall_end));
      events.push({ name: `step ${row.step}`, cat: 'step', ph: 'X', ts: base, dur: end * US, pid: steps, tid: tid(steps, 'step'), args: { step: row.step, run: run.label } });
      for (const s of row.spans) {
        const p = s.worker ? pid(`${prefix}worker ${s.worker}`) : steps;
        const lane = s.activity ?? 'step spans';
        events.push({
          name: s.name,
          cat: 'span',
          ph: 'X',
          ts: base + s.wall_start * US,
          dur: Math.max(0, s.wall_end - s.wall_start) * US,
          pid: p,
          tid: tid(p, lane),
          args: { step: row.step, run: run.label, duration_s: s.duration, ...(s.activity ? { activity: s.activity } : {}), ...(s.worker ? { worker: s.worker } : {}), ...(s.request ? { request: s.request } : {}), ...(s.polls ? { polls: s.polls } : {}) },
        });
      }
    }
  }
  return { traceEvents: events, displayTimeUnit: 'ms', otherData: { source: 'cookbook report --trace', runs: timed.map((t) => basename(t.run.logDir)).join(', '), origin_unix_s: String(origin) } };
}

/** Writes the trace of the targets' runs to `out` and returns how many span events it holds. */
export async function writeTrace(targets: readonly string[], out: string, opts: Pick<ReportOptions, 'lookup'> = {}): Promise<number> {
  const runs = (await resolveTargets(targets, opts.lookup)).flatMap((dir) => loadRuns(dir));
  const trace = buildTrace(runs);
  writeFileAtomic(out, JSON.stringify(trace));
  return trace.traceEvents.filter((e) => e.ph === 'X').length;
}
