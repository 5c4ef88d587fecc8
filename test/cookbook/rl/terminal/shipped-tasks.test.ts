// Every shipped terminal task in the real episode sandbox: its image builds from its Dockerfile, its
// tests fail on the starting files (reward 0: nothing passes by doing nothing) and pass once its
// solution/solve.sh has run (reward 1), graded the reference's way (HarborReward).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { episodeSandboxAvailable, LocalEpisodeSandbox } from '../../../../src/cookbook/sandbox/episode.js';
import { taskImage } from '../../../../src/cookbook/rl/envs/terminal/env.js';
import { loadHarborTasks } from '../../../../src/cookbook/rl/envs/terminal/tasks.js';
import { harborReward } from '../../../../src/cookbook/rl/envs/terminal/tools.js';

const TASKS = join(import.meta.dirname, '..', '..', '..', '..', 'data', 'terminal_tasks');
const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);

describe.skipIf(unavailable)('the shipped terminal tasks', { timeout: 240_000 }, () => {
  const tasks = loadHarborTasks(TASKS);

  it('ships at least ten tasks in Harbor layout', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(10);
    for (const t of tasks) expect(t.instruction.trim().length, t.taskName).toBeGreaterThan(20);
  });

  it.each(tasks.map((t) => [t.taskName, t] as const))('%s: the tests fail as shipped and pass after its solution', async (_name, task) => {
    const image = await taskImage(task);
    const grade = async (sandbox: LocalEpisodeSandbox) => (await harborReward({ testsDir: join(task.taskDir, 'tests'), sandbox })([]))[0];
    const before = await LocalEpisodeSandbox.create({ from: image.snapshot, env: image.env });
    const after = await LocalEpisodeSandbox.create({ from: image.snapshot, env: image.env });
    try {
      const solved = async () => {
        const solve = await after.runCommand(readFileSync(join(task.taskDir, 'solution', 'solve.sh'), 'utf8'), { workdir: '/app', timeout: 60 });
        expect(solve.exitCode, solve.stderr).toBe(0);
        return grade(after);
      };
      const [unsolvedReward, solvedReward] = await Promise.all([grade(before), solved()]);
      expect(unsolvedReward, 'reward of the starting files').toBe(0);
      expect(solvedReward, 'reward after the solution').toBe(1);
    } finally {
      await Promise.all([before.cleanup(), after.cleanup()]);
    }
  });
});
