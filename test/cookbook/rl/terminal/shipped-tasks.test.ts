// Every shipped terminal task in the real episode sandbox: its image builds from its Dockerfile, its
// tests fail on the starting files (reward 0: nothing passes by doing nothing) and pass once the
// commands of its solution/solve.sh ran through the bash tool (reward 1, graded the reference's way,
// HarborReward) — which is how scripts/gen-terminal-sft.ts makes each warm-up transcript, so the
// transcripts made now must equal data/terminal_sft.jsonl byte for byte (the tasks a shipped config
// holds out have none). The generated chores' transcripts that follow are remade and compared too:
// every twentieth here, all of them in the fuller tier.
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
import { GENERATED, heldOutTasks, SFT_FILE, TASKS_DIR, transcript, warmupPlans, warmupShippedTasks, warmupTranscript } from '../../../../scripts/gen-terminal-sft.js';
import { fullTier } from '../../../support/tier.js';

const REGENERATE = '(regenerate: node --import tsx scripts/gen-terminal-sft.ts)';
const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);

describe.skipIf(unavailable)('the shipped terminal tasks', { timeout: 240_000 }, () => {
  const tasks = loadHarborTasks(TASKS_DIR);
  const shipped = readFileSync(SFT_FILE, 'utf8').trimEnd().split('\n');
  const trained = warmupShippedTasks().map((t) => t.taskName);

  it('ships at least ten tasks in Harbor layout; the warm-up has a transcript of each but the held-out ones, then the generated ones', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(10);
    for (const t of tasks) expect(t.instruction.trim().length, t.taskName).toBeGreaterThan(20);
    const held = heldOutTasks();
    expect(held.size).toBeGreaterThan(0);
    for (const name of held) expect(tasks.map((t) => t.taskName), `held-out task ${name}`).toContain(name);
    expect(trained).toHaveLength(tasks.length - held.size);
    expect(shipped).toHaveLength(trained.length + GENERATED);
    for (const name of held) expect(shipped.some((line) => line.includes(JSON.stringify(tasks.find((t) => t.taskName === name)!.instruction).slice(1, 61))), name).toBe(false);
  });

  it.each(tasks.map((t) => [t.taskName, t] as const))('%s: the tests fail as shipped and pass after its solution', async (_name, task) => {
    const renderer = toolDeclaring(getRenderer('qwen3', await getTokenizer('tiny-qwen3')), 'terminal');
    const image = await taskImage(task);
    const unsolved = await LocalEpisodeSandbox.create({ from: image.snapshot, env: image.env });
    try {
      const [[reward], solved] = await Promise.all([harborReward({ testsDir: join(task.taskDir, 'tests'), sandbox: unsolved })([]), transcript(task, renderer)]);
      expect(reward, 'reward of the starting files').toBe(0);
      // transcript() throws unless the solution's commands earn reward 1.
      const i = trained.indexOf(task.taskName);
      if (i >= 0) expect(JSON.stringify({ messages: solved }), `line ${i + 1} of data/terminal_sft.jsonl ${REGENERATE}`).toBe(shipped[i]);
    } finally {
      await unsolved.cleanup();
    }
  });

  const plans = warmupPlans().map((plan, k) => [plan.task.name, plan, k] as const);
  it.each(fullTier ? plans : plans.filter(([, , k]) => k % 20 === 0))('generated %s: its check fails before its commands and passes after; its transcript is the shipped one', async (_name, plan, k) => {
    const renderer = toolDeclaring(getRenderer('qwen3', await getTokenizer('tiny-qwen3')), 'terminal');
    const line = trained.length + k;
    expect(JSON.stringify({ messages: await warmupTranscript(plan, renderer) }), `line ${line + 1} of data/terminal_sft.jsonl ${REGENERATE}`).toBe(shipped[line]);
  });
});
