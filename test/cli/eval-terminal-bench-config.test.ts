// `cookbook eval <model> terminal_bench`'s config, resolved as the CLI does before any run exists:
// the benchmarks' sampling defaults and the reference's MAX_TURNS, --data as rows in the HF layout
// (a local folder or file, or a Hub id), --limit and terminal.only on the rows by example id, and
// the suite listed with the agentic ones.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkEvalData, formatSuites, resolveEval } from '../../src/cli/eval.js';
import { loadTerminalEval } from '../../src/cookbook/eval/suites/terminal.js';

const runsDir = mkdtempSync(join(tmpdir(), 'h56f-config-'));
afterAll(() => rmSync(runsDir, { recursive: true, force: true }));
const SAMPLE = join(import.meta.dirname, '..', '..', 'data', 'eval', 'terminal_bench');
const resolve = (args: Parameters<typeof resolveEval>[2] = {}) => resolveEval('tiny-qwen3', 'terminal_bench', args, { runsDir, workflowId: `cfg-${Math.random().toString(36).slice(2)}` });

describe('eval terminal_bench: config', () => {
  it("has the benchmarks' sampling defaults and the reference's 100 turns, under --set; one episode per row", () => {
    const c = resolve().config;
    expect([c.max_tokens, c.temperature, c.num_samples, c.data_path]).toEqual([32768, 0.6, 1, null]);
    expect(c.terminal).toMatchObject({ max_turns: 100, max_trajectory_tokens: null, only: null });
    expect(resolve({ set: ['terminal.max_turns=3'] }).config.terminal?.max_turns).toBe(3);
    expect(() => resolve({ samples: '2' })).toThrow(/num_samples.*one episode per task/);
  });

  it('--data: rows in the HF layout, a local folder or file, or a Hub id kept for the HF cache', async () => {
    const file = join(SAMPLE, 'data', 'test-00000-of-00001.parquet');
    expect(resolve({ data: SAMPLE }).config.data_path).toBe(SAMPLE);
    expect(resolve({ data: file }).config.data_path).toBe(file);
    expect(resolve({ data: 'ia03/terminal-bench' }).config.data_path).toBe('ia03/terminal-bench');
    expect(() => resolve({ data: 'no-such-folder' })).toThrow(/--data: no-such-folder does not exist/);
    expect(await checkEvalData(resolve({ data: file }))).toBe(3);
  });

  it('--limit takes the first rows in file order; terminal.only picks rows by example id', async () => {
    expect(await checkEvalData(resolve())).toBe(3);
    const first = await loadTerminalEval(resolve({ limit: '2' }).config);
    expect(first.tasks.map((t) => t.taskName)).toEqual(['terminal_bench_hello-file', 'terminal_bench_count-error-lines']);
    const only = await loadTerminalEval(resolve({ set: ['terminal.only=["terminal_bench_fix-sum-script","terminal_bench_hello-file"]'] }).config);
    expect(only.tasks.map((t) => t.taskName)).toEqual(['terminal_bench_fix-sum-script', 'terminal_bench_hello-file']);
    await expect(checkEvalData(resolve({ set: ['terminal.only=["nope"]'] }))).rejects.toThrow(/terminal\.only: no task "nope".*terminal_bench_hello-file/);
  });

  it('is listed with the agentic suites', () => {
    expect(formatSuites()).toMatch(/terminal_bench +Terminal-Bench rows/);
  });
});
