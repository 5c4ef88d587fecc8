// Every shipped terminal task in the real episode sandbox: its image builds from its Dockerfile, its
// tests fail on the starting files (reward 0: nothing passes by doing nothing) and pass once the
// commands of its solution/solve.sh ran through the bash tool (reward 1, graded the reference's way,
// HarborReward) — which is how scripts/gen-terminal-sft.ts makes each warm-up transcript, so the
// transcripts made now must equal data/terminal_sft.jsonl byte for byte.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getRenderer } from '../../../../src/cookbook/renderers/registry.js';
import { taskImage } from '../../../../src/cookbook/rl/envs/terminal/backend.js';
import { loadHarborTasks } from '../../../../src/cookbook/rl/envs/terminal/tasks.js';
import { harborReward } from '../../../../src/cookbook/rl/envs/terminal/tools.js';
import { episodeSandboxAvailable, LocalEpisodeSandbox } from '../../../../src/cookbook/sandbox/episode.js';
import { getTokenizer } from '../../../../src/cookbook/tokenizer.js';
import { toolDeclaring } from '../../../../src/cookbook/tool-use/index.js';
import { TASKS_DIR, transcript } from '../../../../scripts/gen-terminal-sft.js';

const SFT_FILE = join(TASKS_DIR, '..', 'terminal_sft.jsonl');
const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);

describe.skipIf(unavailable)('the shipped terminal tasks', { timeout: 240_000 }, () => {
  const tasks = loadHarborTasks(TASKS_DIR);
  const shipped = readFileSync(SFT_FILE, 'utf8').trimEnd().split('\n');

  it('ships at least ten tasks in Harbor layout, one warm-up transcript each', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(10);
    for (const t of tasks) expect(t.instruction.trim().length, t.taskName).toBeGreaterThan(20);
    expect(shipped).toHaveLength(tasks.length);
  });

  it.each(tasks.map((t, i) => [t.taskName, t, i] as const))('%s: the tests fail as shipped and pass after its solution', async (_name, task, i) => {
    const renderer = toolDeclaring(getRenderer('qwen3', await getTokenizer('tiny-qwen3')), 'terminal');
    const image = await taskImage(task);
    const unsolved = await LocalEpisodeSandbox.create({ from: image.snapshot, env: image.env });
    try {
      const [[reward], solved] = await Promise.all([harborReward({ testsDir: join(task.taskDir, 'tests'), sandbox: unsolved })([]), transcript(task, renderer)]);
      expect(reward, 'reward of the starting files').toBe(0);
      // transcript() throws unless the solution's commands earn reward 1.
      expect(JSON.stringify({ messages: solved }), `line ${i + 1} of data/terminal_sft.jsonl (regenerate: node --import tsx scripts/gen-terminal-sft.ts)`).toBe(shipped[i]);
    } finally {
      await unsolved.cleanup();
    }
  });
});
