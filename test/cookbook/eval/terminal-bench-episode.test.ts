// terminal_bench episodes (cookbook/eval/suites/terminal-bench*.ts) on the real episode sandbox,
// the real qwen3 renderer and tokenizer and a real run store, with a sampler that answers as a
// model that knows the task would: each shipped row's own solution.sh (from its archive) as one
// bash call, then a final message — every row is PASS, so each shipped run-tests.sh passes after a
// correct solution; the same episode at the same eval position replays with no command run; a
// model that answers without acting is FAIL (the tests fail on the starting files).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleResponse, SamplingSession } from '../../../src/backends/types.js';
import { exampleSeed } from '../../../src/cookbook/eval/benchmark-run.js';
import { loadTerminalEval, TerminalEvalSchema } from '../../../src/cookbook/eval/suites/terminal.js';
import { tarFiles } from '../../../src/cookbook/eval/suites/terminal-bench-archive.js';
import type { TerminalBenchTask } from '../../../src/cookbook/eval/suites/terminal-bench.js';
import { TERMINAL_BENCH_SYSTEM_PROMPT } from '../../../src/cookbook/eval/suites/terminal-bench-env.js';
import { evaluateTerminalTask, type TerminalEpisodeSetup } from '../../../src/cookbook/eval/suites/terminal-run.js';
import { readRows } from '../../../src/cookbook/hf/readers.js';
import { rendererForModel } from '../../../src/cookbook/renderers/for-model.js';
import { deriveSeed } from '../../../src/cookbook/rl/seeds.js';
import { runStoreOnce } from '../../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../../src/cookbook/run-store.js';
import { episodeSandboxAvailable } from '../../../src/cookbook/sandbox/episode.js';
import type { Tokenizer } from '../../../src/cookbook/tokenizer.js';
import { toolDeclaring, type ToolDeclaringRenderer } from '../../../src/cookbook/tool-use/index.js';

const ROWS = join(import.meta.dirname, '..', '..', '..', 'data', 'eval', 'terminal_bench', 'data', 'test-00000-of-00001.parquet');
const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

let renderer: ToolDeclaringRenderer;
let tokenizer: Tokenizer;
let tasks: TerminalBenchTask[];
/** Each shipped row's solution.sh, by task id. */
const solutions = new Map<string, string>();
beforeAll(async () => {
  const r = await rendererForModel('tiny-qwen3');
  renderer = toolDeclaring(r.renderer, 'test');
  tokenizer = r.tokenizer;
  tasks = (await loadTerminalEval({ suite: 'terminal_bench', data_path: null, limit: null })).tasks as TerminalBenchTask[];
  for await (const { data } of readRows({ absPath: ROWS, displayPath: 'rows', kind: 'parquet' }, undefined, { bytes: true })) {
    const solution = tarFiles(gunzipSync(data.archive as Uint8Array)).find((f) => f.name === './solution.sh')!;
    solutions.set(data.task_id as string, solution.data.toString('utf8'));
  }
});

interface Prompted {
  seed: number | undefined;
  prompt: string;
}

/** A sampler that answers the given turns in order, ending each with the renderer's stop token; it keeps each request's seed and decoded prompt. */
function scriptedSession(turns: string[]): SamplingSession & { requests: Prompted[] } {
  const requests: Prompted[] = [];
  return {
    samplingSessionId: 'scripted',
    requests,
    async sample(prompt, _n, params): Promise<SampleResponse> {
      const text = turns[Math.min(requests.length, turns.length - 1)];
      const ints = prompt.chunks.flatMap((c) => ('tokens' in c ? c.tokens : []));
      requests.push({ seed: params.seed ?? undefined, prompt: tokenizer.decode(ints) });
      return { sequences: [{ tokens: tokenizer.encode(`${text}<|im_end|>`, { addSpecialTokens: false }), stop_reason: 'stop' }] };
    },
    computeLogprobs: () => Promise.reject(new Error('not used')),
  };
}

function setup(session: SamplingSession, logPath: string): TerminalEpisodeSetup {
  const store = new RunStore(logPath);
  return {
    session,
    openSession: () => Promise.reject(new Error('no side samplers here')),
    policyModel: { model_name: 'tiny-qwen3' },
    renderer,
    tokenizer,
    sampling: { seed: 7, max_tokens: 64, temperature: 0 },
    terminal: TerminalEvalSchema.parse({ max_turns: 4, sandbox_backend: 'local' }),
    suite: 'terminal_bench',
    onceFor: (index) => runStoreOnce(store, ['eval', 0, index]),
    writeTrajectory: (task) => `${task}.txt`,
  };
}

const call = (command: string) => `<tool_call>\n${JSON.stringify({ name: 'bash', arguments: { command } })}\n</tool_call>`;

describe.skipIf(unavailable)('terminal_bench episodes', { timeout: 180_000 }, () => {
  it("each shipped row solved by its own solution.sh: PASS from run_tests.sh's exit code, with the reference's prompt and metrics", async () => {
    const logPath = mkdtempSync(join(tmpdir(), 'h56f-episode-'));
    dirs.push(logPath);
    expect(tasks.map((t) => t.taskName)).toEqual(['terminal_bench_hello-file', 'terminal_bench_count-error-lines', 'terminal_bench_fix-sum-script']);
    const results = await Promise.all(
      tasks.map(async (task, index) => {
        const session = scriptedSession([call(solutions.get(task.taskId)!), 'Done.']);
        const r = await evaluateTerminalTask(index, task, setup(session, logPath));
        return { r, session };
      }),
    );
    for (const [index, { r, session }] of results.entries()) {
      expect(r, r.id).toMatchObject({ index, id: tasks[index].taskName, status: 'PASS', correct: true, reward: 1, turns: 2, error: null });
      expect(r.reward_details).toEqual({ correct: 1, num_turns: 2, num_commands: 1, 'stop/completed': 1 });
      expect(r.test_verdict).toMatch(/^reward 1 · run_tests\.sh exit 0\nPASSED test_/);
      const [first, second] = session.requests;
      expect(first.prompt).toContain(TERMINAL_BENCH_SYSTEM_PROMPT);
      expect(first.prompt).toContain(`<|im_start|>user\n## Task\n${tasks[index].instruction}<|im_end|>`);
      expect(first.prompt).toContain('"description": "Execute a bash command in the sandbox environment."');
      // The tool's answer: the reference's JSON of exit code, stdout and stderr.
      expect(second.prompt).toContain('{"exit_code": 0, "stdout": "", "stderr": ""}');
      expect(session.requests.map((q) => q.seed)).toEqual([0, 1].map((turn) => deriveSeed(exampleSeed(7, 'terminal_bench', index), turn)));
    }
  });

  it('a command runs at /app behind PAGER=cat MANPAGER=cat; replayed at the same position, the same result with no command run; not acting is FAIL', async () => {
    const logPath = mkdtempSync(join(tmpdir(), 'h56f-episode-'));
    dirs.push(logPath);
    const execLog = join(logPath, 'exec.jsonl');
    process.env.COOKBOOK_SANDBOX_EXEC_LOG = execLog;
    const ran = () => (existsSync(execLog) ? readFileSync(execLog, 'utf8').trim().split('\n').filter(Boolean).length : 0);
    try {
      const task = tasks[1];
      // The reference's prefix sets PAGER for the first command only, as the shell reads it.
      const look = call('printenv PAGER; pwd; ls; ls tests; test -x run_tests.sh && echo runnable');
      const first = scriptedSession([look, 'I am done.']);
      const r = await evaluateTerminalTask(5, task, setup(first, logPath));
      expect(r).toMatchObject({ status: 'FAIL', reward: 0, turns: 2, error: null });
      expect(r.reward_details).toEqual({ correct: 0, num_turns: 2, num_commands: 1, 'stop/completed': 1 });
      expect(r.test_verdict).toMatch(/^reward 0 · run_tests\.sh exit 1\n/);
      expect(first.requests[1].prompt).toContain(
        '{"exit_code": 0, "stdout": "cat\\n/app\\nDockerfile\\nrun-tests.sh\\nrun_tests.sh\\nserver.log\\ntask.yaml\\ntests\\ntest_outputs.py\\nrunnable\\n", "stderr": ""}',
      );
      const commands = ran();
      // The setup (mkdir, the files, run_tests.sh), the agent's command and the test run.
      expect(commands).toBeGreaterThanOrEqual(task.setupFiles.size + 3);

      const again = scriptedSession([look, 'I am done.']);
      const replayed = await evaluateTerminalTask(5, task, setup(again, logPath));
      expect({ ...replayed, seconds: 0 }).toEqual({ ...r, seconds: 0 });
      expect(again.requests).toEqual(first.requests);
      expect(ran()).toBe(commands);
    } finally {
      delete process.env.COOKBOOK_SANDBOX_EXEC_LOG;
    }
  });
});
