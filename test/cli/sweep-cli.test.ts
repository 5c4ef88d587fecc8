// `cookbook sweep` end to end, as a user runs it (no TTY), against the real stack: a line per
// finished point, the ranked table with the best marked, `sweep status`, `status`, `report`, and
// config errors that name the sweep key.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Service } from '../../src/cli/services.js';
import { cookbookLive, cookbookOn as cookbook } from '../support/cli.js';
import { startTestStack, waitUntil, workerProcess, type TestStack } from '../support/stack.js';
import { pauseSignal, progressQuery, type Progress } from '../../src/workflows/shared/messages.js';
import type { PipelineProgress } from '../../src/workflows/pipeline.js';

const root = join(import.meta.dirname, '..', '..');
const config = join(root, 'test', 'fixtures', 'sweep_small.json');
const pipelineConfig = join(root, 'test', 'fixtures', 'sweep_pipeline.json');

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

  it('a pipeline sweep: set reaches the running stage through the point, bad keys are refused, the table names the stage keys', async () => {
    const id = 'sweep-cli-pipeline';
    const started = await cookbook(stack, ['sweep', pipelineConfig, '--set', 'max_runs=1', '--detach', '--id', id]);
    expect(started.err).not.toMatch(/error/i);
    expect(started.out).toContain('sweep of pipeline on tiny-qwen3: 1 points, ≤2 at once, ranked by test/nll (min)');
    const point = `${id}/000-stages.1.learning_rate=0.01`;
    const query = <T>(wid: string) => stack.client.workflow.getHandle(wid).query(progressQuery) as Promise<T>;
    // A pause is honoured at the stage's next step boundary, and a stage that ends first leaves the
    // point holding between stages, with none running to set. So it is sent straight to the sweep
    // (not through a CLI process that takes seconds to start on a loaded machine) once the last
    // stage is a step in, with five of its six steps to go.
    const stageId = `${point}/1-dpo`;
    await waitUntil('the point in its DPO stage', async () => {
      const running = (await query<PipelineProgress>(point)).stages.find((s) => s.status === 'running');
      return running?.workflowId === stageId && (await query<Progress>(stageId)).step >= 1;
    }, 300_000, 50);
    await stack.client.workflow.getHandle(id).signal(pauseSignal);
    await waitUntil('the running stage paused', async () => (await query<Progress>(stageId)).status === 'paused', 120_000, 100);

    const set = await cookbook(stack, ['set', id, 'lr_multiplier=0.5']);
    expect(set.code).toBe(0);
    expect(set.out).toContain(`${id}: hot settings now {"lr_multiplier":0.5,"eval_every":0,"save_every":0}`);
    expect(set.out).toContain(`  → ${point}: forwarded`);
    expect(set.out).toMatch(new RegExp(`    → ${stageId.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: from step \\d+`));
    expect((await query<Progress>(stageId)).hot.lr_multiplier).toBe(0.5);
    const bad = await cookbook(stack, ['set', id, 'learning_rate=0.1']);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain('set: unknown setting "learning_rate" (hot settings: lr_multiplier, eval_every, save_every)');

    expect((await cookbook(stack, ['resume', id])).code).toBe(0);
    const watch = await cookbook(stack, ['sweep', 'watch', id]);
    expect(watch.code, `sweep watch: ${watch.err}${watch.out}`).toBe(0);
    expect(watch.out).toMatch(/^\[1\/1\] 000-stages\.1\.learning_rate=0\.01 completed · 2 steps · test\/nll \d+\.\d+$/m);
    expect(watch.out).toMatch(/^\s+point\s+stages\.1\.learning_rate\s+status\s+steps\s+test\/nll$/m);
    expect(watch.out).toMatch(/^best: 000-stages\.1\.learning_rate=0\.01 \(test\/nll [\d.]+, min\)$/m);
  });

  it('a bad pipeline sweep key fails before anything starts, naming the key', async () => {
    const r = await cookbook(stack, ['sweep', pipelineConfig, 'grid={"stages.3.learning_rate":[0.1]}']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('grid.stages.3.learning_rate: the pipeline has no stage 3 (stages 0–1)');
  });

  it('sweep watch follows a sweep that no worker runs: it says so once, and goes on when a worker starts', async () => {
    const id = 'sweep-cli-noworker';
    await worker.stop();
    const started = await cookbook(stack, ['sweep', config, '--set', 'max_runs=1', 'overrides=["max_steps=2","eval_every=1","save_every=0"]', '--detach', '--id', id]);
    expect(started.code, started.err).toBe(0);
    const watch = cookbookLive(stack, ['sweep', 'watch', id]);
    try {
      await watch.until(/no worker (is polling|has polled) task queue .*; waiting/);
      worker = await workerProcess(stack, 'worker-again');
      const r = await watch.done;
      expect(r.code, r.err).toBe(0);
      expect(r.out.match(/no worker (is polling|has polled)/g)).toHaveLength(1);
      expect(r.out).toMatch(/^\[1\/1\] 000-\S+ completed · 2 steps · test\/nll \d+\.\d+$/m);
      expect(r.out).toMatch(/^best: 000-\S+ \(test\/nll [\d.]+, min\)$/m);
    } finally {
      watch.kill();
    }
  });
});
