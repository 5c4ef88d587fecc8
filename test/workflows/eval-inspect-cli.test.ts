// `cookbook eval --inspect`'s command line, before anything runs: the task file made absolute and
// checked, a registered task name passed on to Inspect, bad flags and settings refused with their
// name, and --inspect refusing a suite beside it. No stack: nothing here reaches Temporal.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { evalCommand } from '../../src/cli/eval.js';
import { resolveInspectEval } from '../../src/cli/eval-inspect.js';
import { ConfigError } from '../../src/cookbook/config/overrides.js';

const runsDir = mkdtempSync(join(tmpdir(), 'h56j-cli-'));
afterAll(() => rmSync(runsDir, { recursive: true, force: true }));
const TASK_FILE = 'data/eval/inspect/arithmetic.py';

describe('eval --inspect: resolving the command line', () => {
  it('makes a task file absolute (with or without its task name), and keeps a registered task name', () => {
    const r = resolveInspectEval('tiny-qwen3', `${TASK_FILE}@arithmetic`, { limit: '3', set: ['max_tokens=32', 'task_args={"level":2}'] }, { runsDir });
    expect(r.config.task).toBe(`${resolve(TASK_FILE)}@arithmetic`);
    expect(r.config).toMatchObject({ model: 'tiny-qwen3', limit: 3, max_tokens: 32, temperature: 0, seed: 0, task_args: { level: 2 } });
    expect(r.run.kind).toBe('eval');
    expect(r.run.logPath).toBe(join(runsDir, r.workflowId));
    expect(r.workflowId).toMatch(/^eval-inspect-arithmetic-tiny-qwen3-/);
    expect(resolveInspectEval('tiny-qwen3', TASK_FILE, {}, { runsDir }).config.task).toBe(resolve(TASK_FILE));
    expect(resolveInspectEval('tiny-qwen3', 'inspect_evals/gsm8k', {}, { runsDir }).config.task).toBe('inspect_evals/gsm8k');
  });

  it('refuses a missing task file, a bad --limit and bad settings, naming them', () => {
    expect(() => resolveInspectEval('tiny-qwen3', 'nope/missing.py@t', {}, { runsDir })).toThrow(/task file nope\/missing.py does not exist/);
    expect(() => resolveInspectEval('tiny-qwen3', TASK_FILE, { limit: '0' }, { runsDir })).toThrow(/--limit: "0"/);
    expect(() => resolveInspectEval('tiny-qwen3', TASK_FILE, { limit: 'x' }, { runsDir })).toThrow(ConfigError);
    expect(() => resolveInspectEval('tiny-qwen3', TASK_FILE, { set: ['temperature=-1'] }, { runsDir })).toThrow(/temperature/);
    expect(() => resolveInspectEval('tiny-qwen3', TASK_FILE, { set: ['chunk_size=2'] }, { runsDir })).toThrow(/chunk_size/);
  });

  it('takes the model and the task only: a suite or --benchmarks beside --inspect is refused', async () => {
    const o = { engineUrl: 'http://127.0.0.1:1', connect: () => Promise.reject(new Error('not reached')), runsDir };
    await expect(evalCommand(['tiny-qwen3', 'gsm8k'], { ...o, inspect: TASK_FILE })).rejects.toThrow(/--inspect: give the model and the Inspect task only/);
    await expect(evalCommand(['tiny-qwen3'], { ...o, inspect: TASK_FILE, benchmarks: 'gsm8k' })).rejects.toThrow(/--inspect/);
  });
});
