// `cookbook eval <model> terminal`'s config, resolved as the CLI does before any run exists: the
// reference eval's defaults (max_tokens 2048, greedy, 10 turns), --set over them, --data as a
// folder or a downloaded Harbor dataset's name, --limit and terminal.only on the task list, and
// the refusals that name the option (terminal settings on another suite, several samples).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkEvalData, evalProgressLine, formatSuites, resolveEval } from '../../src/cli/eval.js';
import { loadHarborTasks } from '../../src/cookbook/rl/envs/terminal/tasks.js';
import { shippedTerminalTasksDir } from '../../src/cookbook/eval/suites/terminal.js';

const runsDir = mkdtempSync(join(tmpdir(), 'h55teval-config-'));
afterAll(() => rmSync(runsDir, { recursive: true, force: true }));
const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'terminal_tasks_eval');
const resolve = (suite: string, args: Parameters<typeof resolveEval>[2] = {}) => resolveEval('tiny-qwen3', suite, args, { runsDir, workflowId: `cfg-${Math.random().toString(36).slice(2)}` });

describe('eval terminal: config', () => {
  it("has the reference eval's defaults, under --set; the single-turn suites keep theirs and get no terminal settings", () => {
    const c = resolve('terminal').config;
    expect([c.max_tokens, c.temperature, c.num_samples, c.data_path]).toEqual([2048, 0, 1, null]);
    expect(c.terminal).toMatchObject({ max_turns: 10, sandbox_timeout: 3600, command_timeout: 120, grader_timeout: 60, max_trajectory_tokens: null, only: null });
    const set = resolve('terminal', { set: ['max_tokens=64', 'temperature=0.5', 'terminal.max_turns=3'] }).config;
    expect([set.max_tokens, set.temperature, set.terminal?.max_turns]).toEqual([64, 0.5, 3]);
    const gsm8k = resolve('gsm8k').config;
    expect([gsm8k.max_tokens, gsm8k.temperature]).toEqual([32768, 0.6]);
    expect('terminal' in gsm8k).toBe(false);
  });

  it('refuses terminal settings on another suite and several samples per task, naming the option', () => {
    expect(() => resolve('gsm8k', { set: ['terminal.max_turns=3'] })).toThrow(/terminal.*not gsm8k/);
    expect(() => resolve('terminal', { samples: '2' })).toThrow(/num_samples.*one episode per task/);
    expect(() => resolve('terminal', { set: ['terminal.max_turn=3'] })).toThrow(/terminal.*max_turn/);
  });

  it('--data: a folder of task folders, or the name of a dataset under ~/.cache/harbor/tasks (a missing one says how to download it)', () => {
    expect(resolve('terminal', { data: FIXTURES }).config.data_path).toBe(FIXTURES);
    expect(() => resolve('terminal', { data: 'no-such-harbor-dataset' })).toThrow(/--data: .*no-such-harbor-dataset.*harbor datasets download/);
    // A relative folder is found from the working directory, as the other suites' --data.
    expect(resolve('terminal', { data: relative(process.cwd(), FIXTURES) }).config.data_path).toBe(FIXTURES);
  });

  it('--limit keeps the first tasks by name, terminal.only names them; a missing one is refused before any run', async () => {
    const names = loadHarborTasks(shippedTerminalTasksDir()).map((t) => t.taskName);
    expect(await checkEvalData(resolve('terminal'))).toBe(names.length);
    expect(await checkEvalData(resolve('terminal', { limit: '3' }))).toBe(3);
    expect(await checkEvalData(resolve('terminal', { data: FIXTURES, set: ['terminal.only=["write-magic-word"]'] }))).toBe(1);
    await expect(checkEvalData(resolve('terminal', { data: FIXTURES, set: ['terminal.only=["nope"]'] }))).rejects.toThrow(/terminal data: terminal.only: no task "nope" .*needs-docker, write-magic-word/);
  });

  it('--list and the progress lines speak of tasks and passes', () => {
    expect(formatSuites()).toMatch(/^terminal\s+Harbor terminal tasks/m);
    const p = { kind: 'eval', model: 'm', status: 'running', step: 1, totalSteps: 2, paused: false, stopRequested: false, lastMetrics: { examples_done: 2, num_examples: 3, num_correct: 1 }, hot: { lr_multiplier: 1, eval_every: 0, save_every: 0 }, recoveries: 0, logPath: '' } as const;
    expect(evalProgressLine('terminal', p)).toBe('terminal: 2/3 tasks (chunk 1/2) · 1 passed · pass rate so far 0.5000 · running');
    expect(evalProgressLine('gsm8k', p)).toBe('gsm8k: 2/3 examples (chunk 1/2) · 1 correct · accuracy so far 0.5000 · running');
  });
});
