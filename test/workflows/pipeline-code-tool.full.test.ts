// configs/pipeline_code_tool.json on the real stack: a supervised warm-up on the code_rl
// transcripts (data/code_rl/sft_tool_calls.jsonl), then code_rl RL from its weights. The randomly
// initialised tiny model writes no tool call of its own; after the warm-up its RL rollouts call
// `check_solution` at the RL temperature, each call runs the code in the local sandbox (recorded
// once in the run store), the verdict is the next observation's <tool_response>, the final answer
// is graded in the sandbox, and `cookbook report`'s rollout browser shows the calls and verdicts.
// Fuller tier: the warm-up is 160 SFT steps over ~540-token transcripts.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSolutionTool } from '../../src/cookbook/rl/envs/code/env.js';
import { loadCodeTasks } from '../../src/cookbook/rl/envs/code/tasks.js';
import { LocalSandbox } from '../../src/cookbook/sandbox/index.js';
import { getTokenizer } from '../../src/cookbook/tokenizer.js';
import { esc } from '../../src/report/html.js';
import { buildReportHtml } from '../../src/report/report.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { maskSandboxTimes, rolloutToolCalls, runWarmupPipeline } from '../support/tool-calls.js';

const REPO = join(import.meta.dirname, '..', '..');
const CONFIG = join(REPO, 'configs', 'pipeline_code_tool.json');
const RL_STEPS = 4;

describe('code_rl RL after a tool-call warm-up', { timeout: 3_600_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('the RL stage calls check_solution, gets the sandbox verdict in the next observation, records it once, and the report shows both', async () => {
    const { rlDir, rlConfig, nll, seconds, logPath } = await runWarmupPipeline(stack, CONFIG, RL_STEPS);

    // Every logged call, checked against the sandbox and the run store.
    const tok = await getTokenizer('tiny-qwen3');
    const tasks = loadCodeTasks(join(REPO, rlConfig.dataset.args.train_file), 'warmup_problems.jsonl');
    const { steps, episodes, firstTurnCalls, calls, trajectories } = rolloutToolCalls(rlDir, tok);
    expect(steps).toEqual([...Array(RL_STEPS).keys()]);
    const opts = { runner: new LocalSandbox(), timeout: rlConfig.dataset.args.timeout as number };
    for (const c of calls) {
      // The group's problem: the one its first observation states.
      const first = trajectories.find((t) => t.step === c.step && t.group === c.group)!.trajectory.transitions[0];
      const text = tok.decode(first.ob.chunks.flatMap((ch) => (ch.type === 'encoded_text' ? ch.tokens : [])));
      const task = tasks.find((t) => text.includes(t.problem))!;
      expect(task, c.call).toBeDefined();
      // The sandbox's verdict on this code, rerun now: the same but for the measured time.
      const args = JSON.parse(/^check_solution\((.*)\)$/s.exec(c.call)![1]);
      const fresh = await checkSolutionTool(task, opts).run({ arguments: args });
      expect(maskSandboxTimes(c.result), c.call).toBe(maskSandboxTimes(fresh.messages[0].content as string));
      expect(c.recorded, c.call).toBe(c.result);
      if (c.nextObservation !== null) expect(c.nextObservation).toContain(`<tool_response>\n${c.result}\n</tool_response>`);
    }
    const verdicts = calls.filter((c) => c.result.startsWith('{"passed": '));
    const passed = verdicts.filter((c) => c.result.startsWith('{"passed": true'));
    const fenced = trajectories.filter((t) => t.trajectory.transitions.at(-1)!.metrics.format === 1).length;
    console.log(
      `[pipeline_code_tool] ${seconds.toFixed(0)} s; SFT nll ${nll[0].toFixed(2)} → ${nll.at(-1)!.toFixed(2)} over ${nll.length} steps; ` +
        `RL: ${firstTurnCalls}/${episodes} episodes open with a parsed tool call, ${calls.length} calls (${verdicts.length} ran, ${passed.length} passed), ${fenced} fenced answers`,
    );
    // A model that never learned the format gives 0.
    expect(firstTurnCalls / episodes).toBeGreaterThanOrEqual(0.15);
    expect(verdicts.length).toBeGreaterThan(0);

    // The report of the pipeline (both stages): each call and its verdict in the RL stage's rollout browser.
    const html = await buildReportHtml([logPath]);
    for (const { call, result } of calls) {
      expect(html).toContain(`<pre class="tool-call-text">${esc(call)}</pre>`);
      expect(html).toContain(`<pre class="tool-result${result.startsWith('{"error"') ? ' bad' : ''}">${esc(result)}</pre>`);
    }
  });
});
