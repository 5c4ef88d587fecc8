// What the CLI prints for people: numbers, statuses, the runs table and train's summary.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatNumber } from '../../src/cli/numbers.js';
import { progressLine, statusWords } from '../../src/cli/progress.js';
import { formatMetrics } from '../../src/cli/runs.js';
import { elideMiddle, runsTable, statusCell, type RunRow } from '../../src/cli/runs-table.js';
import { checkRunData, resolveRun } from '../../src/cli/train.js';
import { configLine, runSummary } from '../../src/cli/train-summary.js';
import type { Progress } from '../../src/workflows/shared/messages.js';

const root = join(import.meta.dirname, '..', '..');

describe('numbers for people', () => {
  it('drops float32 noise and negative zero, keeps what a value says', () => {
    expect(formatNumber(Math.fround(16.000001))).toBe('16');
    expect(formatNumber(-0)).toBe('0');
    expect(formatNumber(-1e-9)).toBe('-1e-9');
    expect(formatNumber(Math.fround(0.1))).toBe('0.1');
    expect(formatNumber(2.345678912)).toBe('2.34568');
    expect(formatNumber(0.000123456)).toBe('0.000123456');
    expect(formatNumber(1234567)).toBe('1234567');
    expect(formatNumber(3.25e-5)).toBe('3.25e-5');
    expect(formatNumber(2.5e12 + 0.5)).toBe('2.5e12');
    expect(formatNumber(2.5e12)).toBe('2500000000000');
    expect(formatNumber(NaN)).toBe('NaN');
    expect(formatNumber(2.34567, 4)).toBe('2.346');
  });
  it('status metrics and the progress line use them', () => {
    const lines = formatMetrics({ num_sequences: Math.fround(16.000001), 'env/all/advantage': -0, train_mean_nll: 2.3456789 });
    expect(lines).toEqual(['  metrics:', `    ${'env/all/advantage'.padEnd(20)} 0`, `    ${'num_sequences'.padEnd(20)} 16`, `    ${'train_mean_nll'.padEnd(20)} 2.34568`]);
    const p: Progress = { kind: 'rl', model: 'm', status: 'running', step: 3, totalSteps: 10, paused: false, stopRequested: false, lastMetrics: { 'env/all/reward/total': -0 }, hot: { lr_multiplier: 1, eval_every: 0, save_every: 0 }, recoveries: 0, logPath: '/x' };
    expect(progressLine(p)).toBe('step 3/10 · [#######-----------------] · 30% · env/all/reward/total 0 · running');
  });
});

describe('run status words', () => {
  const p = (status: Progress['status'], paused: boolean, stopRequested = false) => statusWords({ status, paused, stopRequested });
  it('say a status once, and a control the run has not reached yet', () => {
    expect(p('paused', true)).toBe('paused');
    expect(p('running', true)).toBe('running (pause requested)');
    expect(p('running', false, true)).toBe('running (stop requested)');
    expect(p('paused', true, true)).toBe('paused (stop requested)');
    expect(p('stopping', false, true)).toBe('stopping');
    expect(p('running', false)).toBe('running');
  });
});

describe('the runs table', () => {
  const row = (id: string, model: string, status = 'running', temporal = 'RUNNING'): RunRow => ({ id, kind: 'sweep', model, step: '12', status, temporal });
  const long = [
    row('sweep-sweep_lr_and_rank_grid-20261127-201500/003-stages.1.learning_rate=0.0001,lora_rank=64', '/home/someone/checkpoints/Qwen3-30B-A3B-Instruct-2507-finetuned'),
    row('sl-sl_demo-20261127-201501', 'tiny-qwen3', 'completed', 'COMPLETED'),
    row('rl-rl_guess_number-20261127-201502', 'Qwen/Qwen3-8B', 'running', 'TERMINATED'),
  ];

  it('fits 120 columns: a model path shortened from its start, a long id in its middle', () => {
    const { lines, elided } = runsTable(long);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(120);
    expect(elided).toBe(true);
    expect(lines[1]).toMatch(/^sweep-sweep_lr_and_rank_gr\S*…\S*lora_rank=64 +sweep +…\S*-finetuned +12 +running$/);
    expect(lines[2]).toMatch(/^sl-sl_demo-20261127-201501 +sweep +tiny-qwen3 +12 +completed$/);
    expect(lines[3]).toMatch(/ terminated \(was running\)$/);
  });
  it('leaves short tables and --wide untouched', () => {
    const { lines, elided } = runsTable(long, Infinity);
    expect(elided).toBe(false);
    expect(lines[1].startsWith(`${long[0].id}  `)).toBe(true);
    expect(lines[1]).toContain(long[0].model);
    const short = runsTable(long.slice(1));
    expect(short.elided).toBe(false);
    expect(short.lines[0]).toMatch(/^WORKFLOW ID +KIND +MODEL +STEP +STATUS$/);
  });
  it('names Temporal\'s status only where it tells more than the run\'s own', () => {
    expect(statusCell('stopped', 'COMPLETED')).toBe('stopped');
    expect(statusCell('running', 'TIMED_OUT')).toBe('timed out (was running)');
    expect(statusCell('', 'RUNNING')).toBe('running');
    expect(elideMiddle('abcdefghij', 5)).toBe('ab…ij');
  });
});

describe("train's summary", () => {
  it('says kind, model, data, steps and learning rate in a few lines, and where the whole config is', async () => {
    const resolved = resolveRun('sl', join(root, 'configs', 'sl_demo.json'), ['num_epochs=2', 'learning_rate=0.0020000001'], { runsDir: '/tmp/runs' });
    const plan = await checkRunData(resolved);
    expect(plan).toBeDefined();
    const lines = runSummary(resolved, plan);
    expect(lines[0]).toBe('sl: supervised fine-tune of tiny-qwen3 on example_chat');
    expect(lines[1]).toBe(`  steps  ${plan!.batches * 2} (${plan!.batches} batches × 2 epochs)`);
    expect(plan!.batches).toBeGreaterThan(1);
    expect(lines[2]).toBe('  lr     0.002 (linear schedule)');
    expect(lines).toHaveLength(3);
    expect(configLine(resolved)).toBe(`config   ${join(resolved.run.logPath, 'config.json')} (the resolved config, written as the run starts; --verbose prints it here)`);
    const capped = resolveRun('sl', join(root, 'configs', 'sl_demo.json'), ['max_steps=3'], { runsDir: '/tmp/runs' });
    expect(runSummary(capped, await checkRunData(capped))[1]).toMatch(/^ {2}steps {2}3 \(\d+ batches × 1 epoch, cut to max_steps 3\)$/);
  });
});
