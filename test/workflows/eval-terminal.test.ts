// `cookbook eval <model> terminal` on the real stack (Temporal dev server, the engine over HTTP,
// real tokenizer, the real episode sandbox): one agent episode per Harbor task, each task PASS,
// FAIL or ERROR as the reference's eval.py decides, the pass rate that of those statuses, the
// reference's asummary.txt table in results.md, a trajectory file per task; a task whose image
// cannot be built is an ERROR with its reason, not a failed eval. `terminal_bench` on the same
// machinery: a shipped Terminal-Bench row as one episode in the generic image.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEval, startEval } from '../../src/cli/eval.js';
import { loadHarborTasks } from '../../src/cookbook/rl/envs/terminal/tasks.js';
import { episodeSandboxAvailable } from '../../src/cookbook/sandbox/episode.js';
import { aggregateTerminal, summaryLine, taskStatus, type TerminalResultsFile } from '../../src/cookbook/eval/suites/terminal-results.js';
import { workflowBundle } from '../../src/workers/worker.js';
import type { EvalWorkflowResult } from '../../src/workflows/eval.js';
import { startTestStack, withWorker, type TestStack } from '../support/stack.js';

const ROOT = join(import.meta.dirname, '..', '..');
const FIXTURES = join(ROOT, 'test', 'fixtures', 'terminal_tasks_eval');
// Short episodes: the tiny model's answers are noise, what is checked is how they are run and graded.
// The local sandbox whether or not a Docker engine answers here: the errors checked are its builder's.
const SET = ['max_tokens=12', 'terminal.max_turns=2', 'chunk_size=2', 'terminal.sandbox_backend=local'];
const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);

let stack: TestStack;
let counter = 0;

async function evaluate(args: { limit?: string; data?: string }, suite = 'terminal'): Promise<{ result: EvalWorkflowResult; file: TerminalResultsFile; id: string }> {
  const r = resolveEval('tiny-qwen3', suite, { ...args, set: SET }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-terminal-${++counter}` });
  const result = (await (await startEval(stack.client, r, stack.taskQueue)).result()) as EvalWorkflowResult;
  return { result, file: JSON.parse(readFileSync(result.resultsPath, 'utf8')) as TerminalResultsFile, id: r.workflowId };
}

describe.skipIf(unavailable)('eval terminal', { timeout: 240_000 }, () => {
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('tiny-qwen3 on the first 3 shipped tasks: one graded episode each, statuses from the rewards, the pass rate from the statuses', async () => {
    await withWorker(stack, async () => {
      const { result, file, id } = await evaluate({ limit: '3' });
      expect(result.status).toBe('completed');
      const names = loadHarborTasks(join(ROOT, 'data', 'terminal_tasks')).slice(0, 3).map((t) => t.taskName);
      expect(file.examples.map((e) => e.id)).toEqual(names);
      expect(file.examples.map((e) => e.index)).toEqual([0, 1, 2]);
      expect(file.sampling).toMatchObject({ max_tokens: 12, temperature: 0 });
      expect(file.terminal.max_turns).toBe(2);
      for (const e of file.examples) {
        // The shipped tasks build and run: every episode took a turn, and ended either in test.sh's
        // verdict or, as the random-weight model's always do, on max_tokens (the reference's -0.1).
        expect(e.error, e.id).toBeNull();
        expect(e.turns).toBeGreaterThanOrEqual(1);
        expect(e.turns).toBeLessThanOrEqual(2);
        if (e.test_verdict === null) expect([e.stop_reason, e.reward, e.reward_details.max_tokens_reached]).toEqual(['max_tokens', -0.1, 1]);
        else expect(e.test_verdict).toMatch(new RegExp(`^reward ${e.reward} · test\\.sh exit \\d+`));
        expect(e.status).toBe(taskStatus(e));
        expect(e.correct).toBe(e.status === 'PASS');
        expect(readFileSync(join(result.logPath, e.trajectory!), 'utf8')).toMatch(/^={60}\n------ Transition \d+ ------\nObservation:: /);
      }
      const passed = file.examples.filter((e) => e.status === 'PASS').length;
      expect(file.metrics.pass_rate).toBe(passed / 3);
      expect(file.metrics.score).toBe(file.metrics.pass_rate);
      expect(file.metrics.num_pass + file.metrics.num_fail + file.metrics.num_error).toBe(3);
      expect(result.metrics).toEqual(aggregateTerminal(file.examples));
      const md = readFileSync(join(result.logPath, 'results.md'), 'utf8');
      expect(md).toMatch(/^\| pass_rate +\| +\d\.\d{4} \|$/m);
      for (const e of file.examples) expect(md).toContain(summaryLine(e));
      expect(md).toContain(`terminal: total=3 pass=${passed} fail=${file.metrics.num_fail} error=0 pass_rate=`);
      expect(readFileSync(join(result.logPath, 'asummary.txt'), 'utf8').trimEnd().split('\n')).toEqual(file.examples.map(summaryLine));
      expect(existsSync(join(result.logPath, 'aerr.txt'))).toBe(false);
      // The workflow is deterministic: its history replays.
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, await stack.client.workflow.getHandle(id).fetchHistory(), id);
    });
  });

  it('a task the model does not solve is FAIL, one whose Dockerfile cannot be built is ERROR with the reason; the eval completes', async () => {
    await withWorker(stack, async () => {
      const { result, file } = await evaluate({ data: FIXTURES });
      expect(result.status).toBe('completed');
      const [broken, unsolved] = file.examples;
      expect(broken.id).toBe('needs-docker');
      expect(broken.status).toBe('ERROR');
      expect(broken.error).toMatch(/needs-docker\/environment\/Dockerfile:1: FROM ubuntu:22\.04 needs Docker/);
      expect(broken.turns).toBe(0);
      expect(broken.trajectory).toBeNull();
      expect(unsolved.id).toBe('write-magic-word');
      expect(unsolved.status).toBe('FAIL');
      expect(unsolved.error).toBeNull();
      expect(unsolved.reward).toBeLessThanOrEqual(0);
      expect(unsolved.turns).toBeGreaterThanOrEqual(1);
      expect(file.metrics).toMatchObject({ pass_rate: 0, score: 0, num_pass: 0, num_fail: 1, num_error: 1, num_examples: 2 });
      expect(readFileSync(join(result.logPath, 'aerr.txt'), 'utf8')).toContain(`${'='.repeat(60)}\nTask: needs-docker\n${'='.repeat(60)}\n${broken.error}\n`);
      expect(result.table).toContain('terminal: total=2 pass=0 fail=1 error=1 pass_rate=0.0%');
    });
  });

  it('terminal_bench --limit 1: the first shipped row in the generic image, its id terminal_bench_<task_id>, its status from its reward; MAX_TURNS 100 by default', async () => {
    expect(resolveEval('tiny-qwen3', 'terminal_bench', {}, { runsDir: join(stack.dir, 'runs'), workflowId: 'unused' }).config).toMatchObject({ max_tokens: 32768, temperature: 0.6, terminal: { max_turns: 100 } });
    await withWorker(stack, async () => {
      const { result, file } = await evaluate({ limit: '1' }, 'terminal_bench');
      expect(result.status).toBe('completed');
      expect(file.suite).toBe('terminal_bench');
      expect(file.data).toBe(join(ROOT, 'data', 'eval', 'terminal_bench'));
      expect(file.terminal.max_turns).toBe(2);
      expect(file.examples.map((e) => e.id)).toEqual(['terminal_bench_hello-file']);
      const [e] = file.examples;
      // The generic image builds and the row's files are written: the episode ran and took a turn,
      // ending in run_tests.sh's verdict or on max_tokens (no penalty: the suite's failed_parse_reward is 0).
      expect(e.error).toBeNull();
      expect(e.turns).toBeGreaterThanOrEqual(1);
      expect(e.turns).toBeLessThanOrEqual(2);
      if (e.test_verdict === null) expect([e.stop_reason, e.reward]).toEqual(['max_tokens', 0]);
      else expect(e.test_verdict).toMatch(new RegExp(`^reward ${e.reward} · run_tests\\.sh exit \\d+`));
      expect(e.status).toBe(taskStatus(e));
      expect(result.metrics).toEqual(aggregateTerminal(file.examples));
      expect(result.table).toContain(`terminal_bench: total=1 pass=${file.metrics.num_pass} fail=${file.metrics.num_fail} error=0`);
    });
  });
});
