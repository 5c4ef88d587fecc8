// code_rl's grading for real: the shipped problems' tests run in the local sandbox through
// LiveCodeBench's harness (stdin/stdout, functional and TACO-layout tests), the reward and metrics
// the reference computes, the check_solution tool, and sandbox runs that happen once per logical
// position — a rollout retried after a crash replays the recorded verdicts and runs no code.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import { extractCodeFromModel, sandboxCheckCorrectness } from '../../../src/cookbook/rl/envs/code/grading.js';
import { checkSolutionTool, CodeEnvGroupBuilder, type CodeEnvOptions } from '../../../src/cookbook/rl/envs/code/env.js';
import { toolDeclaring, type ToolDeclaringRenderer } from '../../../src/cookbook/tool-use/index.js';
import { loadCodeTasks, type CodeTask } from '../../../src/cookbook/rl/envs/code/tasks.js';
import type { RolloutContext } from '../../../src/cookbook/rl/rollout-context.js';
import { passesThrough } from '../../../src/cookbook/rl/rollouts.js';
import { runStoreOnce } from '../../../src/cookbook/rl/side-effects.js';
import type { StepResult } from '../../../src/cookbook/rl/types.js';
import { RunStore } from '../../../src/cookbook/run-store.js';
import { LocalSandbox, SandboxUnreachableError, type CodeRunner } from '../../../src/cookbook/sandbox/index.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';

const unavailable = await new LocalSandbox().available().then(() => null, (e: Error) => e);

/** The real local sandbox, counting the programs it ran. */
class CountingSandbox implements CodeRunner {
  runs = 0;
  private readonly sandbox = new LocalSandbox();
  run(...args: Parameters<CodeRunner['run']>) {
    this.runs++;
    return this.sandbox.run(...args);
  }
  async close() {}
}

const tasks = loadCodeTasks(join(import.meta.dirname, '..', '..', '..', 'data', 'code_rl_problems.jsonl'), 'data/code_rl_problems.jsonl');
const fenced = (code: string) => `Here is my solution.\n\`\`\`python\n${code}\n\`\`\`\n`;

const SOLUTIONS: Record<number, string> = {
  0: 'a, b = map(int, input().split())\nprint(a + b)',
  1: "s = input().strip()\nprint(sum(c in 'aeiou' for c in s))",
  2: 'class Solution:\n    def maxDifference(self, nums: List[int]) -> int:\n        if len(nums) < 2:\n            return 0\n        best, low = nums[1] - nums[0], nums[0]\n        for x in nums[1:]:\n            best = max(best, x - low)\n            low = min(low, x)\n        return best',
  3: 'class Solution:\n    def rotatesToReverse(self, s: str, k: int) -> bool:\n        return any(s[i:] + s[:i] == s[::-1] for i in range(min(k, len(s)) + 1))',
  4: "n = int(input())\nfor i in range(1, n + 1):\n    print('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else i)",
  5: 'input()\nprint(*sorted(map(int, input().split())))',
};

describe('code_rl problems', () => {
  it('load in the DeepCoder layout: LiveCodeBench tests (stdin and functional) and TACO tests, inside the LiveCodeBench prompt', () => {
    expect(tasks).toHaveLength(6);
    expect(tasks.map((t) => t.tests[0].testtype)).toEqual(['stdin_stdout', 'stdin_stdout', 'functional', 'functional', 'stdin_stdout', 'stdin_stdout']);
    expect(tasks[2].tests[0].metadata).toEqual({ func_name: 'maxDifference' });
    expect(tasks[4].tests).toHaveLength(3); // from {"inputs": […], "outputs": […]}
    expect(tasks[0].problem).toMatch(/^You are an expert Python programmer\. .*### Format: Read the inputs from stdin .*```python\n# YOUR CODE HERE\n```\n\n### Answer: \(use the provided format with backticks\)\n\n$/s);
    expect(tasks[2].problem).toContain('```python\nclass Solution:\n    def maxDifference');
  });

  it('extract the last fenced block, as the reference does', () => {
    expect(extractCodeFromModel('a\n```python\nx = 1\n```\nb\n```\n  y = 2  \n```')).toBe('y = 2');
    expect(extractCodeFromModel('```python x = 1```')).toBeNull();
    expect(extractCodeFromModel('no code')).toBeNull();
  });
});

describe.runIf(!unavailable)('code_rl grading in the local sandbox', { timeout: 120_000 }, () => {
  const sandbox = new LocalSandbox();

  it.each(Object.keys(SOLUTIONS).map(Number))('problem %i: the right solution passes every test', async (i) => {
    const [passed, details] = await sandboxCheckCorrectness(sandbox, tasks[i].tests, SOLUTIONS[i], 2);
    expect(passed, JSON.stringify(details)).toBe(true);
  });

  it('a wrong answer, a crash, a syntax error and an endless loop fail, with the harness saying why', async () => {
    const check = (code: string, task: CodeTask = tasks[0]) => sandboxCheckCorrectness(sandbox, task.tests, code, 1);
    const wrong = await check('a, b = map(int, input().split())\nprint(a - b)');
    expect(wrong[0]).toBe(false);
    expect(wrong[1]).toMatchObject({ status: 'Failed', run_result: { return_code: 255 } });
    const functionalWrong = await check('class Solution:\n    def maxDifference(self, nums):\n        return 0', tasks[2]);
    expect(functionalWrong[0]).toBe(false);
    expect(String((functionalWrong[1].run_result as { stdout: string }).stdout)).toContain("'error_message': 'Wrong Answer'");
    const syntax = await check('def (:');
    expect(syntax[0]).toBe(false);
    expect(String((syntax[1].run_result as { stdout: string }).stdout)).toContain("'error_message': 'Compilation Error'");
    const loop = await check('while True:\n    pass');
    expect(loop[0]).toBe(false);
    expect(String((loop[1].run_result as { stdout: string }).stdout)).toContain("'error_message': 'Time Limit Exceeded'");
  });
});

describe.runIf(!unavailable)('code_rl episodes', { timeout: 120_000 }, () => {
  let tok: Tokenizer;
  let renderer: ToolDeclaringRenderer;
  let imEnd: number;
  const dirs: string[] = [];
  beforeAll(async () => {
    tok = await getTokenizer('tiny-qwen3');
    renderer = toolDeclaring(getRenderer('qwen3', tok), 'code_rl');
    imEnd = tok.tokenToId('<|im_end|>');
  });
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const action = (text: string) => [...tok.encode(`<think>\nx\n</think>\n\n${text}`, { addSpecialTokens: false }), imEnd];
  const toolCall = (code: string) => `<tool_call>\n${JSON.stringify({ name: 'check_solution', arguments: { code } })}\n</tool_call>`;
  const options = (runner: CodeRunner, gradeAnyAnswer = false): CodeEnvOptions => ({
    runner, maxTurns: 2, timeout: 2, formatCoef: 0.1, maxTrajectoryTokens: 32 * 1024, maxGenerationTokens: null, contextOverflowReward: -0.1, gradeAnyAnswer,
  });
  const cut = (text: string) => tok.encode(text, { addSpecialTokens: false });

  /** One group rollout's episodes as the rollout activity runs them, side effects recorded at (step 1, group 0, attempt 0). */
  async function rollout(logPath: string, runner: CodeRunner, turns: number[][][], gradeAnyAnswer = false): Promise<StepResult[][]> {
    const ctx = { once: runStoreOnce(new RunStore(logPath), [1, 0, 0]) } as Partial<RolloutContext> as RolloutContext;
    const envs = await new CodeEnvGroupBuilder(tasks[0], renderer, turns.length, options(runner, gradeAnyAnswer)).withContext(ctx).makeEnvs();
    return Promise.all(envs.map(async (env, e) => {
      await env.initialObservation();
      const steps: StepResult[] = [];
      // An action without <|im_end|> is one the sampler cut at max_tokens.
      for (const t of turns[e]) steps.push(await env.step(t, { extra: { stop_reason: t.at(-1) === imEnd ? 'stop' : 'length' } }));
      return steps;
    }));
  }

  it('declares check_solution as the reference does and grades with its reward: format_coef · (has_code_block − 1) + correct', async () => {
    const runner = new CountingSandbox();
    const dir = mkdtempSync(join(tmpdir(), 'code-rl-'));
    dirs.push(dir);
    const [[right], [wrong], [prose]] = await rollout(join(dir, 'run'), runner, [[action(fenced(SOLUTIONS[0]))], [action(fenced('print(0)'))], [action('I do not know.')]]);
    expect([right.reward, right.metrics]).toEqual([1, expect.objectContaining({ format: 1, correct: 1, 'stop/completed': 1 })]);
    expect([wrong.reward, wrong.metrics]).toEqual([0, expect.objectContaining({ format: 1, correct: 0 })]);
    expect([prose.reward, prose.metrics]).toEqual([-0.1, expect.objectContaining({ format: 0, correct: 0 })]);
    expect(runner.runs).toBe(2); // no code block, no sandbox run
    expect(checkSolutionTool(tasks[0], options(runner)).toSpec()).toEqual({
      name: 'check_solution',
      description: "Execute the proposed solution against the task's test cases.\n\n        Use this to test your code before providing your final answer.\n        ",
      parameters: { properties: { code: { description: 'Python code implementing the solution.', title: 'Code', type: 'string' } }, required: ['code'], title: 'check_solution_params', type: 'object' },
    });
  });

  it('an answer cut at max_tokens ends ungraded, as in the reference; with grade_any_answer it is graded, and so is one without a fence', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'code-rl-'));
    dirs.push(dir);
    const runner = new CountingSandbox();
    const [[cutAnswer]] = await rollout(join(dir, 'reference'), runner, [[cut(fenced(SOLUTIONS[0]))]]);
    expect([cutAnswer.reward, cutAnswer.episodeDone, cutAnswer.metrics]).toEqual([-0.1, true, { max_tokens_reached: 1, 'stop/max_tokens': 1 }]);
    expect(runner.runs).toBe(0);
    const [[cutRight], [prose]] = await rollout(join(dir, 'any'), runner, [[cut(fenced(SOLUTIONS[0]))], [action(SOLUTIONS[0])]], true);
    expect([cutRight.reward, cutRight.episodeDone, cutRight.metrics]).toEqual([1, true, { format: 1, correct: 1, max_tokens_reached: 1, 'stop/max_tokens': 1 }]);
    // Run whole: the code is right, the format (no fenced block) is not.
    expect([prose.reward, prose.metrics]).toEqual([0.9, expect.objectContaining({ format: 0, correct: 1 })]);
    expect(runner.runs).toBe(2);
  });

  it('a sandbox out of reach is no verdict: the episode throws (no strategy absorbs it), nothing is recorded, and the retried rollout runs the code', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'code-rl-'));
    dirs.push(dir);
    const logPath = join(dir, 'run');
    const unreachable = new SandboxUnreachableError('sandbox http://127.0.0.1:9/run_code unreachable for 300 s (ECONNREFUSED; 64 tries; SANDBOX_RETRY_SECONDS=300)');
    const down: CodeRunner = { run: async () => Promise.reject(unreachable), close: async () => {} };
    const turns = () => [[action(toolCall(SOLUTIONS[0])), action(fenced(SOLUTIONS[0]))], [action(fenced(SOLUTIONS[0]))]];
    await expect(rollout(logPath, down, turns())).rejects.toBe(unreachable);
    expect(passesThrough(unreachable)).toBe(true);
    const records = join(logPath, '.cookbook', 'store', 'side_effects', '1_0_0');
    expect(existsSync(records) ? readdirSync(records).filter((f) => f.endsWith('.json')) : []).toEqual([]);
    const runner = new CountingSandbox();
    const retried = await rollout(logPath, runner, turns());
    expect(runner.runs).toBe(3); // the tool call and both final answers, run once the sandbox is back
    expect(retried[0][0].logs?.tool_result_0).toMatch(/^\{"passed": true, "details": \{"status": "Success"/);
    expect(retried.map((steps) => steps.at(-1)!.reward)).toEqual([1, 1]);
  });

  it('a rollout retried after a crash replays the tool calls and verdicts it recorded and runs no code twice', async () => {
    const turns = () => [
      [action(toolCall('print(1)')), action(fenced(SOLUTIONS[0]))],
      [action(toolCall(SOLUTIONS[0])), action(fenced(SOLUTIONS[0]))],
    ];
    const cleanDir = mkdtempSync(join(tmpdir(), 'code-rl-'));
    dirs.push(cleanDir);
    const clean = await rollout(join(cleanDir, 'run'), new CountingSandbox(), turns());
    expect(clean[0][0].logs?.tool_result_0).toMatch(/^\{"passed": false, "details": \{"status": "Failed"/);
    expect(clean[1][0].logs?.tool_result_0).toMatch(/^\{"passed": true, "details": \{"status": "Success"/);
    expect(clean.map((steps) => steps.at(-1)!.reward)).toEqual([1, 1]);

    const dir = mkdtempSync(join(tmpdir(), 'code-rl-'));
    dirs.push(dir);
    const logPath = join(dir, 'run');
    const runner = new CountingSandbox();
    // The first attempt dies after each episode's tool call ran, before the final answers.
    await rollout(logPath, runner, turns().map((t) => t.slice(0, 1)));
    expect(runner.runs).toBe(2);
    const retried = await rollout(logPath, runner, turns());
    expect(runner.runs).toBe(4); // the two final answers only
    const view = (r: StepResult[][]) => r.map((steps) => steps.map((s) => [s.reward, s.episodeDone, s.metrics, { ...s.logs, tool_result_0: s.logs?.tool_result_0 && JSON.parse(String(s.logs.tool_result_0)).passed }]));
    expect(view(retried)).toEqual(view(clean));
    expect(readdirSync(join(logPath, '.cookbook', 'store', 'side_effects', '1_0_0')).filter((f) => f.endsWith('.json')).sort()).toEqual([
      'sandbox_episode_0_final_answer.json',
      'sandbox_episode_1_final_answer.json',
      'tool_episode_0_turn_1_call_0.json',
      'tool_episode_1_turn_1_call_0.json',
    ]);
    // Once more (a third attempt): every run comes from the record.
    const third = await rollout(logPath, runner, turns());
    expect(runner.runs).toBe(4);
    expect(third.map((steps) => steps.map((s) => s.logs))).toEqual(retried.map((steps) => steps.map((s) => s.logs)));
  });
});
