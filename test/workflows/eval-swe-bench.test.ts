// `cookbook eval <model> swe_bench` on the real stack (Temporal dev server, the engine over HTTP,
// real tokenizer, the real episode sandbox): the first shipped row as one agent episode in its repo,
// cloned inside the sandbox from the mirrors test/fixtures/swe_bench_repos_gen.sh makes, graded by
// pytest on its FAIL_TO_PASS test; a row whose repo cannot be cloned is SKIPPED with its reason,
// listed in results.json and results.md, and out of the resolve rate's denominator.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveEval, startEval } from '../../src/cli/eval.js';
import { aggregateSweBench } from '../../src/cookbook/eval/suites/swe-bench.js';
import { summaryLine, taskStatus, type TerminalResultsFile } from '../../src/cookbook/eval/suites/terminal-results.js';
import { episodeSandboxAvailable } from '../../src/cookbook/sandbox/episode.js';
import type { EvalWorkflowResult } from '../../src/workflows/eval.js';
import { startTestStack, withWorker, type TestStack } from '../support/stack.js';

const ROOT = join(import.meta.dirname, '..', '..');
const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);

let stack: TestStack;
let tmp: string;
let counter = 0;

async function evaluate(args: { limit?: string; data?: string }, set: string[]): Promise<{ result: EvalWorkflowResult; file: TerminalResultsFile & { skipped: Array<{ id: string; reason: string }> } }> {
  const r = resolveEval('tiny-qwen3', 'swe_bench', { ...args, set: ['max_tokens=12', 'terminal.max_turns=2', 'terminal.sandbox_backend=local', ...set] }, { runsDir: join(stack.dir, 'runs'), workflowId: `eval-swe-bench-${++counter}` });
  const result = (await (await startEval(stack.client, r, stack.taskQueue)).result()) as EvalWorkflowResult;
  return { result, file: JSON.parse(readFileSync(result.resultsPath, 'utf8')) };
}

describe.skipIf(unavailable)('eval swe_bench', { timeout: 240_000 }, () => {
  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'h56h-eval-'));
    execFileSync(join(ROOT, 'test', 'fixtures', 'swe_bench_repos_gen.sh'), [join(tmp, 'repos')]);
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('--limit 1: the first shipped row cloned from its mirror and graded by pytest; MAX_TURNS 100 by default', async () => {
    expect(resolveEval('tiny-qwen3', 'swe_bench', {}, { runsDir: join(stack.dir, 'runs'), workflowId: 'unused' }).config).toMatchObject({ terminal: { max_turns: 100, repos_dir: null } });
    await withWorker(stack, async () => {
      const { result, file } = await evaluate({ limit: '1' }, [`terminal.repos_dir=${join(tmp, 'repos')}`]);
      expect(result.status).toBe('completed');
      expect(file.suite).toBe('swe_bench');
      expect(file.data).toBe(join(ROOT, 'data', 'eval', 'swe_bench'));
      expect(file.examples.map((e) => e.id)).toEqual(['swe_bench_cookbook-fixtures__tiny_calc-1']);
      const [e] = file.examples;
      // The repo cloned and the episode ran: it took a turn, and ended in pytest's verdict (the bug
      // is still there: exit 1) or on max_tokens (no penalty: failed_parse_reward is 0).
      expect(e.error).toBeNull();
      expect(e.turns).toBeGreaterThanOrEqual(1);
      if (e.test_verdict === null) expect([e.stop_reason, e.reward]).toEqual(['max_tokens', 0]);
      else expect(e.test_verdict).toMatch(/^reward 0 · pytest exit 1\n[^]*1 failed/);
      expect(e.status).toBe(taskStatus(e));
      expect(file.skipped).toEqual([]);
      expect(result.metrics).toEqual(aggregateSweBench(file.examples));
      expect(result.metrics).toMatchObject({ num_examples: 1, num_skipped: 0, num_tasks: 1 });
      expect(result.table).toContain('swe_bench: resolved 0/1 (0.0%) · 0 of 1 tasks skipped');
    });
  });

  it('a row whose repo cannot be cloned is SKIPPED with the reason, listed, and out of the score; the eval completes', async () => {
    const rows = readFileSync(join(ROOT, 'data', 'eval', 'swe_bench', 'data', 'test-00000-of-00001.jsonl'), 'utf8').trim().split('\n');
    const gone = { ...JSON.parse(rows[0]), instance_id: 'gone__repo-1', repo: 'gone/repo' };
    mkdirSync(join(tmp, 'data', 'data'), { recursive: true });
    writeFileSync(join(tmp, 'data', 'data', 'test-00000-of-00001.jsonl'), `${JSON.stringify(gone)}\n`);
    await withWorker(stack, async () => {
      const { result, file } = await evaluate({ data: join(tmp, 'data') }, [`terminal.repos_dir=${join(tmp, 'repos')}`]);
      expect(result.status).toBe('completed');
      const [e] = file.examples;
      expect(e).toMatchObject({ id: 'swe_bench_gone__repo-1', status: 'SKIPPED', reward: 0, turns: 0, trajectory: null });
      expect(e.error).toMatch(/^swe_bench setup failed \(exit 128\): git clone --depth=50 https:\/\/github\.com\/gone\/repo\.git \/workspace\/repo {2}stderr=/);
      expect(e.error).toContain(`(no mirror of gone/repo in ${join(tmp, 'repos')})`);
      expect(file.skipped).toEqual([{ id: e.id, reason: e.error }]);
      expect(file.metrics).toMatchObject({ score: 0, num_examples: 0, num_skipped: 1, num_tasks: 1 });
      expect(result.table).toContain(summaryLine(e));
      expect(result.table).toContain('swe_bench: resolved 0/0 (0.0%) · 1 of 1 tasks skipped');
      expect(result.table).toContain(`- SKIPPED swe_bench_gone__repo-1: ${e.error}`);
    });
  });
});
