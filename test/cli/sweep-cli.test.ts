// `cookbook sweep` end to end, as a user runs it (no TTY), against the real stack: a line per
// finished point, the ranked table with the best marked, `sweep status`, `status`, `report`, and
// config errors that name the sweep key.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Service } from '../../src/cli/services.js';
import { cookbookOn as cookbook } from '../support/cli.js';
import { startTestStack, workerProcess, type TestStack } from '../support/stack.js';

const root = join(import.meta.dirname, '..', '..');
const config = join(root, 'test', 'fixtures', 'sweep_small.json');

describe('cookbook sweep', { timeout: 600_000 }, () => {
  let stack: TestStack;
  let worker: Service;
  beforeAll(async () => {
    stack = await startTestStack();
    worker = await workerProcess(stack);
  });
  afterAll(async () => {
    await worker?.stop();
    await stack?.stop();
  });

  it('follows the sweep: a line per finished point, then the table ranked by the metric with the best marked', async () => {
    const id = 'sweep-cli';
    const r = await cookbook(stack, ['sweep', config, '--set', 'max_runs=3', 'overrides=["max_steps=2","eval_every=1","save_every=0"]', '--id', id]);
    expect(r.err).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.out).toContain('sweep of sl on tiny-qwen3: 3 points, ≤2 at once, ranked by test/nll (min)');
    expect(r.out).toContain(`started ${id}`);
    const lines = r.out.split('\n');
    const pointLines = lines.filter((l) => /^\[\d\/3\] /.test(l));
    expect(pointLines.map((l) => l.slice(0, 5))).toEqual(['[1/3]', '[2/3]', '[3/3]']);
    for (const l of pointLines) expect(l).toMatch(/^\[\d\/3\] 00\d-learning_rate=0\.0[13]_lora_rank=[48] completed · 2 steps · test\/nll \d+\.\d+$/);
    const header = lines.findIndex((l) => /^\s+point\s+learning_rate\s+lora_rank\s+status\s+steps\s+test\/nll$/.test(l));
    expect(header).toBeGreaterThan(-1);
    const rows = lines.slice(header + 1, header + 4);
    const values = rows.map((l) => Number(l.trim().split(/\s+/).at(-1)));
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(rows[0]).toMatch(/^\* /);
    expect(rows.slice(1).every((l) => !l.startsWith('*'))).toBe(true);
    expect(lines[header + 4]).toMatch(/^best: 00\d-\S+ \(test\/nll [\d.]+, min\)$/);

    const status = await cookbook(stack, ['sweep', 'status', id]);
    expect(status.out).toContain(`${id}: COMPLETED`);
    expect(status.out).toContain(rows[0]);
    const generic = await cookbook(stack, ['status', id]);
    expect(generic.out).toContain(`${id}: COMPLETED`);

    const report = await cookbook(stack, ['report', id]);
    expect(report.code).toBe(0);
    const out = report.out.match(/^wrote (.+)$/m)![1];
    expect(existsSync(out)).toBe(true);
    expect(readFileSync(out, 'utf8')).toContain('<table class="sweep-results">');
  });

  it('a bad sweep key fails before anything starts, naming the key', async () => {
    const r = await cookbook(stack, ['sweep', config, 'grid={"lora_rnk":[4]}']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('grid.lora_rnk: not a config key of a sl run');
    const w = await cookbook(stack, ['sweep', 'status', 'no-such-sweep']);
    expect(w.code).not.toBe(0);
    expect(w.err).toContain('no sweep with workflow id "no-such-sweep"');
  });
});
