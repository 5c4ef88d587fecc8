// The fuller tier's smoke runs of the load and soak benchmarks and of the long chaos command, each
// as users run it (its own stack, its own process): small sizes, the same pass/fail criteria.
// - bench:load: every run, started all at once, ends with exactly its solo result;
// - soak: a run of many tiny steps through periodic worker and engine kills completes every step,
//   its continue-as-new chain bounding each workflow run's history;
// - chaos: seeded trials of random kills against every target end equal to the baseline.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

function runScript(script: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, script), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('load, soak and long chaos (smoke)', { timeout: 1_200_000 }, () => {
  it('bench:load: runs started together equal their solo runs', async () => {
    const r = await runScript('bench/load/run.ts', ['--sl', '4', '--rl', '1', '--sl-steps', '3']);
    expect(r.out).toMatch(/completed: 5\/5; equal to their solo runs: 5\/5/);
    expect(r.code, r.out.slice(-3000)).toBe(0);
  });

  it('soak: every step through worker and engine kills, histories bounded by continue-as-new', async () => {
    const r = await runScript('bench/soak/run.ts', ['--steps', '150', '--kill-every-s', '20', '--steps-per-run', '50', '--report-every-s', '10']);
    expect(r.out).toMatch(/completed after 150 steps/);
    const chain = r.out.match(/ (\d+) runs, at most (\d+) events/);
    expect(chain, r.out.slice(-3000)).not.toBeNull();
    expect(Number(chain![1])).toBeGreaterThanOrEqual(3);
    expect(r.code, r.out.slice(-3000)).toBe(0);
  });

  it('chaos --trials 2: random kills of every target leave the uninterrupted result', async () => {
    const r = await runScript('test/chaos/run.ts', ['--trials', '2', '--kills', '3', '--seed', '101']);
    expect(r.out).toMatch(/2 trials equal \/ 2 trials run/);
    expect(r.code, r.out.slice(-3000)).toBe(0);
  });
});
