// One terminal eval episode (cookbook/eval/suites/terminal-run.ts) on the real episode sandbox,
// the real qwen3 renderer and tokenizer and a real run store, with a sampler that answers as a
// model that knows the task would: a bash tool call that solves it, then a final message. The
// task is PASS with test.sh's reward; the same episode again at the same eval position (a retried
// chunk) samples the same seeds and runs no command; a model that answers without acting is FAIL.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleResponse, SamplingSession } from '../../../src/backends/types.js';
import { exampleSeed } from '../../../src/cookbook/eval/benchmark-run.js';
import { TerminalEvalSchema } from '../../../src/cookbook/eval/suites/terminal.js';
import { evaluateTerminalTask, type TerminalEpisodeSetup } from '../../../src/cookbook/eval/suites/terminal-run.js';
import { rendererForModel } from '../../../src/cookbook/renderers/for-model.js';
import { loadHarborTasks } from '../../../src/cookbook/rl/envs/terminal/tasks.js';
import { deriveSeed } from '../../../src/cookbook/rl/seeds.js';
import { runStoreOnce } from '../../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../../src/cookbook/run-store.js';
import { episodeSandboxAvailable } from '../../../src/cookbook/sandbox/episode.js';
import type { Tokenizer } from '../../../src/cookbook/tokenizer.js';
import { toolDeclaring, type ToolDeclaringRenderer } from '../../../src/cookbook/tool-use/index.js';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'terminal_tasks_eval');
const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

let renderer: ToolDeclaringRenderer;
let tokenizer: Tokenizer;
beforeAll(async () => {
  const r = await rendererForModel('tiny-qwen3');
  renderer = toolDeclaring(r.renderer, 'test');
  tokenizer = r.tokenizer;
});

/** A sampler that answers the given turns in order, ending each with the renderer's stop token; it keeps every request's seed and temperature. */
function scriptedSession(turns: string[]): SamplingSession & { requests: Array<{ seed: number | undefined; temperature: number | undefined }> } {
  const requests: Array<{ seed: number | undefined; temperature: number | undefined }> = [];
  return {
    samplingSessionId: 'scripted',
    requests,
    async sample(_prompt, _n, params): Promise<SampleResponse> {
      const text = turns[Math.min(requests.length, turns.length - 1)];
      requests.push({ seed: params.seed ?? undefined, temperature: params.temperature });
      return { sequences: [{ tokens: tokenizer.encode(`${text}<|im_end|>`, { addSpecialTokens: false }), stop_reason: 'stop' }] };
    },
    computeLogprobs: () => Promise.reject(new Error('not used')),
  };
}

function setup(session: SamplingSession, logPath: string, chunk = 0): TerminalEpisodeSetup {
  const store = new RunStore(logPath);
  return {
    session,
    openSession: () => Promise.reject(new Error('no side samplers here')),
    policyModel: { model_name: 'tiny-qwen3' },
    renderer,
    tokenizer,
    sampling: { seed: 7, max_tokens: 64, temperature: 0 },
    terminal: TerminalEvalSchema.parse({ max_turns: 4, sandbox_backend: 'local' }),
    onceFor: (index) => runStoreOnce(store, ['eval', chunk, index]),
    writeTrajectory: (task, text) => {
      writeFileSync(join(logPath, `${task}.txt`), text);
      return `${task}.txt`;
    },
  };
}

const SOLVE = '<tool_call>\n{"name": "bash", "arguments": {"command": "echo durable > /app/magic.txt"}}\n</tool_call>';

describe.skipIf(unavailable)('a terminal eval episode', { timeout: 120_000 }, () => {
  const task = loadHarborTasks(FIXTURES).find((t) => t.taskName === 'write-magic-word')!;

  it('solved by a bash call: PASS with the test verdict; replayed at the same position, the same result with no command run', async () => {
    const logPath = mkdtempSync(join(tmpdir(), 'h55teval-episode-'));
    dirs.push(logPath);
    const execLog = join(logPath, 'exec.jsonl');
    process.env.COOKBOOK_SANDBOX_EXEC_LOG = execLog;
    const ran = () => (existsSync(execLog) ? readFileSync(execLog, 'utf8').trim().split('\n').filter(Boolean).length : 0);
    try {
      const first = scriptedSession([SOLVE, 'Done.']);
      const r = await evaluateTerminalTask(3, task, setup(first, logPath));
      expect(r).toMatchObject({ index: 3, id: 'write-magic-word', status: 'PASS', correct: true, reward: 1, turns: 2, error: null });
      expect(r.reward_details).toMatchObject({ reward: 1, test_passed: 1 });
      expect(r.test_verdict).toMatch(/^reward 1 · test\.sh exit 0/);
      expect(readFileSync(join(logPath, r.trajectory!), 'utf8')).toContain('Reward:: 1.0\nEpisode done:: True');
      // The policy's seeds are the example's: (seed, suite, index), one per turn.
      const seed = exampleSeed(7, 'terminal', 3);
      expect(first.requests).toEqual([0, 1].map((turn) => ({ seed: deriveSeed(seed, turn), temperature: 0 })));
      const commands = ran();
      expect(commands).toBeGreaterThanOrEqual(2); // the agent's command and the grader's test run at least

      const again = scriptedSession([SOLVE, 'Done.']);
      const replayed = await evaluateTerminalTask(3, task, setup(again, logPath));
      expect({ ...replayed, seconds: 0 }).toEqual({ ...r, seconds: 0 });
      expect(again.requests).toEqual(first.requests);
      expect(ran()).toBe(commands);
    } finally {
      delete process.env.COOKBOOK_SANDBOX_EXEC_LOG;
    }
  });

  it('answered without acting: FAIL with the reward test.sh gives the starting files', async () => {
    const logPath = mkdtempSync(join(tmpdir(), 'h55teval-episode-'));
    dirs.push(logPath);
    const r = await evaluateTerminalTask(0, task, setup(scriptedSession(['I wrote it.']), logPath));
    expect(r).toMatchObject({ status: 'FAIL', correct: false, reward: 0, turns: 1, error: null });
    expect(r.test_verdict).toMatch(/^reward 0 · test\.sh exit 0/);
  });

  it('a task whose image cannot be built: ERROR naming the Dockerfile line, no turn taken', async () => {
    const logPath = mkdtempSync(join(tmpdir(), 'h55teval-episode-'));
    dirs.push(logPath);
    const broken = loadHarborTasks(FIXTURES).find((t) => t.taskName === 'needs-docker')!;
    const session = scriptedSession(['never asked']);
    const r = await evaluateTerminalTask(1, broken, setup(session, logPath));
    expect(r).toMatchObject({ status: 'ERROR', correct: false, reward: 0, turns: 0, trajectory: null, test_verdict: null });
    expect(r.error).toMatch(/environment\/Dockerfile:1: FROM ubuntu:22\.04 needs Docker/);
    expect(session.requests).toEqual([]);
  });
});
