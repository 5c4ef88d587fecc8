// Run ids are made to the second (`<kind>-<name>-<local time>`): two `train` calls with one config
// in the same second must both start, each with its own id and log folder, against the real
// Temporal server (which decides who got the id). A clash on an id the user chose is a clear error.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveRun, runIdFor, startRun } from '../../src/cli/train.js';
import { startTestStack, type TestStack } from '../support/stack.js';

describe('run ids', () => {
  let stack: TestStack;
  const started: string[] = [];
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    // No worker polls this file's queue: the runs never left `starting`.
    await Promise.all(started.map((id) => stack.client.workflow.getHandle(id).terminate('test over').catch(() => undefined)));
    await stack?.stop();
  });

  it('names a run after its kind once: rl_guess_number → rl_guess_number-…, not rl-rl_guess_number-…', () => {
    const at = new Date(2026, 10, 27, 9, 5, 7);
    expect(runIdFor('rl', 'rl_guess_number', at)).toBe('rl_guess_number-20261127-090507');
    expect(runIdFor('rl', 'guess_number', at)).toBe('rl-guess_number-20261127-090507');
    expect(runIdFor('sl', 'slow', at)).toBe('sl-slow-20261127-090507');
  });

  it('two runs of one config in the same second both start, with their own ids and log folders', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'run-ids-'));
    const overrides = [`run_name=same-second-${stack.taskQueue}`];
    const a = resolveRun('sl', 'configs/sl_demo.json', overrides, { runsDir });
    const b = resolveRun('sl', 'configs/sl_demo.json', overrides, { runsDir });
    b.workflowId = a.workflowId; // as if made in the same second
    b.run = { ...b.run, workflowId: a.workflowId, logPath: a.run.logPath };
    b.config.log_path = a.run.logPath;
    await startRun(stack.client, a, stack.taskQueue);
    await startRun(stack.client, b, stack.taskQueue);
    started.push(a.workflowId, b.workflowId);
    expect(b.workflowId).toBe(`${a.workflowId}-2`);
    expect(b.run.logPath).toBe(`${a.run.logPath}-2`);
    expect(b.config.log_path).toBe(b.run.logPath);
    const described = await stack.client.workflow.getHandle(b.workflowId).describe();
    expect(described.memo?.config).toMatchObject({ log_path: b.run.logPath });
  });

  it('a clash on an id the user chose names --id', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'run-ids-'));
    const workflowId = `chosen-${stack.taskQueue}`;
    const first = resolveRun('sl', 'configs/sl_demo.json', [], { runsDir, workflowId });
    await startRun(stack.client, first, stack.taskQueue);
    started.push(workflowId);
    const again = resolveRun('sl', 'configs/sl_demo.json', [], { runsDir: mkdtempSync(join(tmpdir(), 'run-ids-')), workflowId });
    await expect(startRun(stack.client, again, stack.taskQueue)).rejects.toThrow(`--id: a run with id ${workflowId} already exists`);
  });
});
