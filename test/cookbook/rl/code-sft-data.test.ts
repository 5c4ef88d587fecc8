// The code_rl warm-up data (data/code_rl/warmup_problems.jsonl and sft_tool_calls.jsonl,
// scripts/gen-code-sft.ts): regenerable (byte for byte but the sandbox's measured execution_time),
// and what the RL env itself would show and parse. Each transcript is stepped through the real
// code env with its assistant turns, rendered, as the actions: the env parses the same
// check_solution call, runs it in the local sandbox and appends the same verdict, its observations
// are the SFT datum's tokens before each trained turn, and the fenced answer grades correct.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import { CodeEnvGroupBuilder, checkSolutionTool, type CodeEnvOptions } from '../../../src/cookbook/rl/envs/code/env.js';
import { toolDeclaring, type ToolDeclaringRenderer } from '../../../src/cookbook/tool-use/index.js';
import { loadCodeTasks, type CodeTask } from '../../../src/cookbook/rl/envs/code/tasks.js';
import { LocalSandbox } from '../../../src/cookbook/sandbox/index.js';
import { loadConversationsJsonl, type ConversationRow } from '../../../src/cookbook/supervised/jsonl.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';
import { fullTier } from '../../support/tier.js';
import { maskSandboxTimes, replayTranscript } from '../../support/tool-calls.js';

const REPO = join(import.meta.dirname, '..', '..', '..');
const DIR = join(REPO, 'data', 'code_rl');
const PROBLEMS = join(DIR, 'warmup_problems.jsonl');
const SFT = join(DIR, 'sft_tool_calls.jsonl');
const unavailable = await new LocalSandbox().available().then(() => null, (e: Error) => e);

let tokenizer: Tokenizer;
let renderer: ToolDeclaringRenderer;
let tasks: CodeTask[];
let rows: ConversationRow[];
const dirs: string[] = [];
beforeAll(async () => {
  tokenizer = await getTokenizer('tiny-qwen3');
  renderer = toolDeclaring(getRenderer('qwen3', tokenizer), 'code_rl');
  tasks = loadCodeTasks(PROBLEMS, 'warmup_problems.jsonl');
  rows = await loadConversationsJsonl(SFT);
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const opts = (): CodeEnvOptions => ({
  runner: new LocalSandbox(),
  maxTurns: 3,
  timeout: 2,
  formatCoef: 0.1,
  maxTrajectoryTokens: 4096,
  maxGenerationTokens: null,
  contextOverflowReward: -0.1,
  gradeAnyAnswer: false,
});

describe.skipIf(unavailable)('code_rl warm-up problems and transcripts', () => {
  const regenerate = (...flags: string[]) => {
    const out = mkdtempSync(join(tmpdir(), 'code-sft-'));
    dirs.push(out);
    execFileSync(process.execPath, ['--import', 'tsx', join(REPO, 'scripts', 'gen-code-sft.ts'), out, ...flags], { cwd: REPO });
    return out;
  };

  it('the problems are what scripts/gen-code-sft.ts writes, byte for byte', () => {
    const out = regenerate('--problems-only');
    expect(readFileSync(join(out, 'warmup_problems.jsonl')).equals(readFileSync(PROBLEMS))).toBe(true);
  });

  // Some 80 sandbox runs: the fuller tier. The gate's stepping test below reruns a third of them.
  it.skipIf(!fullTier)('the transcripts are what it writes, but for measured times', () => {
    const out = regenerate();
    expect(readFileSync(join(out, 'warmup_problems.jsonl')).equals(readFileSync(PROBLEMS))).toBe(true);
    expect(maskSandboxTimes(readFileSync(join(out, 'sft_tool_calls.jsonl'), 'utf8'))).toBe(maskSandboxTimes(readFileSync(SFT, 'utf8')));
  });

  it('one per problem, in order: the env prompt, one or two checks, the passing code in a fence', () => {
    expect(rows).toHaveLength(tasks.length);
    expect(tasks.length).toBeGreaterThanOrEqual(60);
    for (const [i, { messages }] of rows.entries()) {
      const check = checkSolutionTool(tasks[i], opts());
      expect(messages.slice(0, -1).filter((m) => m.role !== 'assistant' && m.role !== 'tool')).toEqual([
        ...renderer.createConversationPrefixWithTools([check.toSpec()]),
        { role: 'user', content: tasks[i].problem },
      ]);
      const calls = messages.filter((m) => m.tool_calls);
      const results = messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content as string));
      expect(calls.length).toBe(i % 5 === 4 ? 2 : 1);
      // A two-check transcript fails first, then passes; the answer is the code that passed.
      expect(results.map((r) => r.passed)).toEqual(calls.length === 2 ? [false, true] : [true]);
      const lastCode = JSON.parse(calls.at(-1)!.tool_calls![0].function.arguments).code;
      expect(messages.at(-1)).toEqual({ role: 'assistant', content: `\`\`\`python\n${lastCode}\n\`\`\`` });
    }
  });

  it('stepped through the RL env: the same observations as the SFT datum, the same calls and verdicts, graded correct', async () => {
    // Every two-check transcript and every fourth other one (each check runs the sandbox).
    const sample = rows.filter((r, i) => r.messages.filter((m) => m.tool_calls).length === 2 || i % 4 === 0);
    const text = (ids: number[]) => maskSandboxTimes(tokenizer.decode(ids));
    for (const { messages, line } of sample) {
      const [env] = await new CodeEnvGroupBuilder(tasks[line - 1], renderer, 1, opts()).makeEnvs();
      for await (const { turn, observation, datumPrefix, assistant, toolResult, step } of replayTranscript(env, renderer, messages)) {
        const at = `line ${line}, turn ${turn}`;
        // The env's observation is what the SFT datum conditions this turn on (the first exactly; later
        // ones hold a fresh sandbox run, whose measured time alone may differ)...
        if (turn === 0) expect(observation, at).toEqual(datumPrefix);
        else expect(text(observation), at).toBe(text(datumPrefix));
        // ...and the trained tokens, as the action, make the env do what the transcript says.
        const call = assistant.tool_calls?.[0];
        if (call) {
          const logged = /^check_solution\((.*)\)$/s.exec(String(step.logs?.tool_call_0));
          expect(logged, at).not.toBeNull();
          expect(JSON.parse(logged![1]), at).toEqual(JSON.parse(call.function.arguments));
          expect(maskSandboxTimes(String(step.logs?.tool_result_0)), at).toBe(maskSandboxTimes(toolResult!.content as string));
          expect(step.episodeDone, at).toBe(false);
        } else {
          expect(step.episodeDone, at).toBe(true);
          expect(step.reward, at).toBe(1);
          expect(step.metrics, at).toMatchObject({ format: 1, correct: 1 });
        }
      }
    }
  });
});
