import { describe, expect, it } from 'vitest';
import { eta, formatDuration, ProgressPrinter, progressLine } from '../../src/cli/progress.js';
import { validateHotSettings, type Progress } from '../../src/workflows/shared/messages.js';

const progress = (over: Partial<Progress> = {}): Progress => ({
  kind: 'sl', model: 'tiny-qwen3', status: 'running', step: 10, totalSteps: 40, paused: false, stopRequested: false,
  lastMetrics: { train_mean_nll: 1.83 }, hot: { lr_multiplier: 1, eval_every: 10, save_every: 20 }, recoveries: 0,
  logPath: '/tmp/x', ...over,
});

describe('progress line', () => {
  it('shows step/total, a bar, ETA from recent pace, last loss and status', () => {
    expect(eta(progress(), [[6, 0], [10, 8000]])).toBe(60);
    expect(progressLine(progress(), [[6, 0], [10, 8000]], 8)).toBe('step 10/40 · [##------] · 25% · ETA 1:00 · train_mean_nll 1.83 · running');
  });
  it('has no ETA without two step times, and says paused', () => {
    expect(progressLine(progress({ paused: true, status: 'paused' }), [], 4)).toBe('step 10/40 · [#---] · 25% · train_mean_nll 1.83 · paused');
  });
  it('the printer measures the pace from its own polls, and restarts it after a rollback', () => {
    const lines: string[] = [];
    const out = { isTTY: false, write: (s: string) => lines.push(s) } as unknown as NodeJS.WriteStream;
    const printer = new ProgressPrinter(out);
    printer.update(progress({ step: 6 }), 0);
    printer.update(progress({ step: 10 }), 8000);
    expect(lines[1]).toContain('ETA 1:00');
    printer.update(progress({ step: 8 }), 9000);
    expect(lines[2]).not.toContain('ETA');
  });
  it('formats durations', () => {
    expect(formatDuration(3725)).toBe('1:02:05');
    expect(formatDuration(59)).toBe('0:59');
  });
});

describe('hot settings validation', () => {
  it('accepts known keys with valid values', () => {
    expect(() => validateHotSettings({ lr_multiplier: 0.5, eval_every: 0, save_every: 5 })).not.toThrow();
  });
  it('names what is wrong', () => {
    expect(() => validateHotSettings({})).toThrow(/nothing to change/);
    expect(() => validateHotSettings({ lr: 1 } as never)).toThrow(/unknown setting "lr"/);
    expect(() => validateHotSettings({ lr_multiplier: 0 })).toThrow(/lr_multiplier must be > 0/);
    expect(() => validateHotSettings({ eval_every: 1.5 })).toThrow(/eval_every must be an integer/);
    expect(() => validateHotSettings({ save_every: 'x' as never })).toThrow(/save_every must be a number/);
  });
});
