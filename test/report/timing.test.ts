// `cookbook report`'s timing: the per-step breakdown panel and each shown step's Gantt from
// timing_spans.jsonl, and `--trace FILE`, a Chrome trace-event file for Perfetto.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunStore } from '../../src/cookbook/run-store.js';
import { timingRow, type Span } from '../../src/cookbook/timing.js';
import { reportCommand } from '../../src/report/cli.js';
import { buildReportHtml } from '../../src/report/report.js';
import { GANTT_STEPS, outermostSpans, stepBreakdown } from '../../src/report/timing.js';
import type { ChromeTrace } from '../../src/report/trace.js';
import { slRun, tempDir } from './fixture.js';

const span = (name: string, start: number, end: number, extra: Partial<Span> = {}): Span => ({ name, duration: end - start, wall_start: start, wall_end: end, ...extra });

/** A pipelined SL step as the workflow times it: submit on one worker, collect on another, waits between. */
function slStepSpans(step: number, t0: number): Span[] {
  const a = { activity: 'slSubmit', worker: '11@host-a' };
  const b = { activity: 'slFinish', worker: '22@host-b' };
  return [
    span('queue_wait', t0, t0 + 0.01, a),
    span('get_batch', t0 + 0.01, t0 + 0.05, a),
    span('submit_batch', t0 + 0.01, t0 + 0.1, a),
    span('queue_wait', t0 + 0.1, t0 + 0.12, b),
    span('backend_wait', t0 + 0.13, t0 + 0.6 + step * 0.1, { ...b, request: 'ForwardBackward' }),
    span('backend_wait', t0 + 0.13, t0 + 0.55, { ...b, request: 'OptimStep' }),
    span('step', t0 + 0.12, t0 + 0.61 + step * 0.1, b),
    span('finish_batch', t0 + 0.12, t0 + 0.62 + step * 0.1, b),
  ];
}

function timedSlRun(steps = 6): string {
  const dir = slRun(tempDir(), 'sl-timed', steps);
  const store = new RunStore(dir);
  for (let step = 0; step < steps; step++) store.writeTimingSpans(timingRow(step, slStepSpans(step, 1_800_000_000 + step)));
  return dir;
}

describe('cookbook report: timing', () => {
  it("breaks a step down by its outermost spans, parallel ones counted once", () => {
    const [row] = [timingRow(0, slStepSpans(0, 0))];
    const parts = Object.fromEntries(stepBreakdown(row).map((p) => [p.name, Number(p.seconds.toFixed(6))]));
    // get_batch lies in submit_batch, step and the backend waits in finish_batch.
    expect(parts).toEqual({ queue_wait: 0.03, submit_batch: 0.09, finish_batch: 0.5 });
    const parallel = timingRow(0, [span('trajectory_group_worker', 0, 2), span('trajectory_group_worker', 1, 3), span('trajectory_group_worker', 5, 6)]);
    expect(stepBreakdown(parallel)).toEqual([{ name: 'trajectory_group_worker', seconds: 4 }]);
    // Two spans of one extent (save_checkpoint inside save_checkpoint_and_get_sampling_client): one is outermost.
    expect(stepBreakdown(timingRow(0, [span('save_checkpoint', 0, 1), span('save_checkpoint_and_get_sampling_client', 0, 1)])).map((p) => p.name)).toEqual(['save_checkpoint']);
  });

  it('finds the outermost spans in one sweep, as the pairwise definition does', () => {
    // Inside no span of another name; of two spans of one extent, the one whose name sorts first is outer.
    const within = (s: Span, o: Span) =>
      s !== o && s.name !== o.name && o.wall_start <= s.wall_start && s.wall_end <= o.wall_end && (o.wall_start !== s.wall_start || o.wall_end !== s.wall_end || o.name < s.name);
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let trial = 0; trial < 200; trial++) {
      const spans = Array.from({ length: 1 + rand(12) }, () => {
        const start = rand(10);
        return span('abcd'[rand(4)], start, start + rand(6));
      });
      const expected = spans.filter((s) => !spans.some((o) => within(s, o)));
      expect(new Set(outermostSpans(spans)), JSON.stringify(spans)).toEqual(new Set(expected));
    }
  });

  it('shows the timing panel and a Gantt of a spread of steps, lanes named by activity and worker', async () => {
    const dir = timedSlRun(12);
    const html = await buildReportHtml([dir]);
    expect(html).toContain('<h2 id="timing">Timing</h2>');
    expect(html).toContain('<a href="#timing">timing</a>');
    const panel = /<figure class="timing-panel" data-run="sl-timed">([\s\S]*?)<\/figure>/.exec(html)?.[1] ?? '';
    expect(panel).toMatch(/^<svg[^>]*class="marks"/);
    expect(panel).toContain('>submit_batch</text>'); // the legend of the stacked segments
    expect(panel).toContain('>finish_batch</text>');
    expect(panel.match(/role-mark[^>]*>/g)?.length ?? 0).toBeGreaterThan(0);
    // The spread (first and last included) plus the slowest step, which here is the last.
    const gantts = [...html.matchAll(/<details class="gantt" id="[^"]+" data-step="(\d+)">/g)].map((m) => Number(m[1]));
    expect(gantts).toHaveLength(GANTT_STEPS);
    expect(gantts[0]).toBe(0);
    expect(gantts.at(-1)).toBe(11);
    const step11 = html.slice(html.indexOf('data-step="11"'));
    expect(step11).toContain('(slowest)');
    expect(step11).toContain('>slSubmit · 11@host-a</text>');
    expect(step11).toContain('>slFinish · 22@host-b</text>');
    expect(step11.slice(0, step11.indexOf('</details>')).match(/<rect class="span"/g)).toHaveLength(8);
    expect(step11).toContain('<title>backend_wait · 1.57 s (0.13–1.7 s) · ForwardBackward · slFinish on 22@host-b</title>');
    // Still one self-contained page with unique ids.
    expect(html).not.toMatch(/<script/);
    const ids = [...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a run without timing_spans.jsonl has no timing section', async () => {
    const html = await buildReportHtml([slRun(tempDir(), 'sl-untimed')]);
    expect(html).not.toContain('id="timing"');
  });

  it('--trace writes a Chrome trace-event file: complete events in microseconds, a process per worker, a thread per activity', async () => {
    const dir = timedSlRun(3);
    const out = join(tempDir(), 'trace.json');
    expect(await reportCommand([dir], { serve: false, trace: out }, async () => dir)).toBe(0);
    const trace = JSON.parse(readFileSync(out, 'utf8')) as ChromeTrace;
    expect(Array.isArray(trace.traceEvents)).toBe(true);
    const complete = trace.traceEvents.filter((e) => e.ph === 'X');
    expect(complete).toHaveLength(3 * (8 + 1)); // every span, and each step's extent
    for (const e of trace.traceEvents) {
      expect(typeof e.name).toBe('string');
      expect(['X', 'M']).toContain(e.ph);
      for (const k of ['ts', 'pid', 'tid'] as const) expect(Number.isInteger(e[k]) || Number.isFinite(e[k]), `${k} of ${JSON.stringify(e)}`).toBe(true);
      if (e.ph === 'X') expect(e.dur).toBeGreaterThanOrEqual(0);
    }
    const names = (kind: string) => trace.traceEvents.filter((e) => e.ph === 'M' && e.name === kind).map((e) => e.args.name);
    expect(names('process_name')).toEqual(['steps', 'worker 11@host-a', 'worker 22@host-b']);
    expect(names('thread_name')).toEqual(['step', 'slSubmit', 'slFinish']);
    // Steps on one timeline: step 2's submit began 2 s after step 0's.
    const submits = complete.filter((e) => e.name === 'submit_batch');
    expect(submits.map((e) => Math.round((e.ts - submits[0].ts) / 1e3))).toEqual([0, 1000, 2000]);
    expect(submits[0].dur).toBeCloseTo(0.09e6, 0);
    const worker = (e: { pid: number }) => names('process_name')[e.pid - 1];
    expect(new Set(complete.filter((e) => e.name === 'backend_wait').map(worker))).toEqual(new Set(['worker 22@host-b']));
    // The page as well, when --out asks for it; --serve and --trace exclude each other.
    const page = join(tempDir(), 'page.html');
    await reportCommand([dir], { serve: false, trace: join(tempDir(), 't.json'), out: page }, async () => dir);
    expect(readFileSync(page, 'utf8')).toContain('id="timing"');
    await expect(reportCommand([dir], { serve: true, trace: out }, async () => dir)).rejects.toThrow(/--trace writes a file; --serve writes none/);
  });

  it('--trace of a run without timing says so', async () => {
    const dir = slRun(tempDir(), 'sl-untimed');
    await expect(reportCommand([dir], { serve: false, trace: join(tempDir(), 't.json') }, async () => dir)).rejects.toThrow(/no timing spans to trace/);
  });
});
