// swe_bench beside the reference (tinker-cookbook 0.6.1 eval/benchmarks/_swe_bench.py, run at test
// time by eval_swe_bench_cases.py): make_envs' fields on the shipped rows (and --limit) and on edge
// rows (FAIL_TO_PASS as a list, a JSON string, a plain string, blank, missing; the lowercase column;
// rows it skips; no instance id); _parse_test_ids; the setup the reference's initial_observation
// runs (clone, fetch and checkout, quoting, the test patch and its --3way fallback, a failing clone's
// reason), its system prompt, user message (hints cut at 2000) and agent env settings; the bash
// tool's spec, command and output cuts; the reward's pytest command and metrics; the aggregate.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aggregateSweBench, parseSweBenchRow, parseTestIds, SWE_BENCH_MAX_TURNS, SWE_BENCH_SYSTEM_PROMPT, sweBenchSystemPrompt, sweBenchUserPrompt, type SweBenchTask } from '../../src/cookbook/eval/suites/swe-bench.js';
import { setUpRepo, SWE_BENCH_ENV_SETTINGS, sweBenchBashTool, sweBenchReward } from '../../src/cookbook/eval/suites/swe-bench-env.js';
import { loadTerminalEval } from '../../src/cookbook/eval/suites/terminal.js';
import type { TerminalTaskResult } from '../../src/cookbook/eval/suites/terminal-results.js';
import type { Message } from '../../src/cookbook/renderers/types.js';
import type { SandboxInterface, SandboxResult } from '../../src/cookbook/sandbox/types.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const SHIPPED = join(import.meta.dirname, '..', '..', 'data', 'eval', 'swe_bench', 'data', 'test-00000-of-00001.jsonl');

const base = { instance_id: 'o__r-1', repo: 'o/r', base_commit: 'abc123', problem_statement: 'It breaks.', hints_text: 'look at x', test_patch: 'diff' };
const ROWS: Array<Record<string, unknown>> = [
  { ...base, FAIL_TO_PASS: ['tests/t.py::a', 'tests/t.py::b[1-2]'] },
  { ...base, instance_id: 'o__r-2', fail_to_pass: '  tests/t.py::plain  ' },
  { ...base, instance_id: 'o__r-3', FAIL_TO_PASS: '"a JSON string"' },
  { ...base, instance_id: 'o__r-4', FAIL_TO_PASS: '   ' },
  { ...base, instance_id: 'o__r-5' },
  { ...base, instance_id: 'o__r-6', problem_statement: '' },
  { ...base, instance_id: 'o__r-7', base_commit: '' },
  { ...base, instance_id: 'o__r-8', problem_statement: null },
  { problem_statement: 'No id, no repo.', base_commit: 'def', FAIL_TO_PASS: '["x"]' },
  { ...base, instance_id: 'o__r-9', fail_to_pass: '["lower"]', FAIL_TO_PASS: '["upper"]' },
  { ...base, instance_id: 'o__r-10', FAIL_TO_PASS: 5 },
  { ...base, instance_id: 'o__r-11', FAIL_TO_PASS: '[1, "a", null]' },
  { ...base, instance_id: 'o__r-12', FAIL_TO_PASS: '[not json' },
];
const TEST_IDS: unknown[] = [['a'], '["a", "b"]', ' x ', '', '  ', '{"a": 1}', '3', 'null', null, 7, '[]', '["ü", "t[a b]"]'];

const ok = { exit_code: 0, stdout: '', stderr: '' };
const longHints = Array.from({ length: 2100 }, (_, i) => (i % 3 === 0 ? '😀' : 'h')).join('');
const setupBase: { system_prompt?: string; repo: string; base_commit: string; problem_statement: string; hints_text: string; test_patch: string } = { repo: 'o/r', base_commit: 'abc123', problem_statement: 'Fix it.\n\nDetails.', hints_text: '', test_patch: 'diff --git a/t b/t\n' };
const SETUP = [
  { ...setupBase, results: [ok] },
  { ...setupBase, hints_text: longHints, results: [ok, ok, ok, ok, { exit_code: 1, stdout: '', stderr: 'error: patch failed' }, ok] },
  { ...setupBase, hints_text: '  \n', test_patch: ' \n', results: [ok] },
  { ...setupBase, system_prompt: 'Custom prompt.', results: [ok] },
  { ...setupBase, system_prompt: '', results: [ok] },
  { ...setupBase, repo: "own er/na'me", base_commit: 'abc; rm -rf /', hints_text: 'h', results: [ok] },
  { ...setupBase, results: [{ exit_code: 128, stdout: '', stderr: `fatal: unable to access: ${'x'.repeat(400)}` }] },
  { ...setupBase, results: [ok, ok, { exit_code: 1, stdout: '', stderr: "error: pathspec 'abc123' did not match" }] },
];

const big = (n: number, unit: string) => Array.from({ length: n }, (_, i) => (i % 97 === 0 ? '\n' : unit)).join('');
const TOOL = [
  { command: 'ls', exit_code: 0, stdout: 'a\nb\n', stderr: '' },
  { command: 'cat missing', exit_code: 1, stdout: '', stderr: 'cat: missing: No such file or directory\n' },
  { command: 'exact', exit_code: 0, stdout: 'x'.repeat(10000), stderr: 'e'.repeat(4000) },
  { command: 'over', exit_code: 0, stdout: big(10001, 'y'), stderr: 'e'.repeat(4001) },
  { command: 'emoji', exit_code: 2, stdout: big(12000, '😀é'), stderr: big(5000, '字') },
  { command: 'ctl', exit_code: 0, stdout: 'tab\tnul\u0000bell\u0007 "q" \\ \u2028', stderr: '' },
];

const call = { id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command": "ls"}' } };
const HISTORY: Message[] = [
  { role: 'system', content: 's' },
  { role: 'user', content: 'u' },
  { role: 'assistant', content: 'look', tool_calls: [call] } as Message,
  { role: 'tool', content: '{}' },
  { role: 'assistant', content: 'done' },
];
const REWARD = [
  { fail_to_pass: ['tests/t.py::a'], run: ok, history: HISTORY },
  { fail_to_pass: ['tests/t.py::test[a b]', "it's", 'plain-1.py::x'], run: { exit_code: 1, stdout: 'FAILED', stderr: '' }, history: HISTORY.slice(0, 3) },
  { fail_to_pass: ['x'], run: null, history: HISTORY },
  { fail_to_pass: [], run: ok, history: HISTORY },
];
const AGGREGATE = [
  { rewards: [1, 0, 1, 0], metrics: [{ num_turns: 3 }, { num_turns: 5 }, {}, { num_turns: 1 }] },
  { rewards: [], metrics: [] },
  { rewards: [0.5, 0], metrics: [{ num_turns: 2 }, { num_turns: 2 }] },
];

interface Fields {
  example_id: string;
  instance_id: string;
  repo: string;
  base_commit: string;
  problem_statement: string;
  hints_text: string;
  test_patch: string;
  fail_to_pass: unknown[];
}
interface SetupOut {
  calls: unknown[];
  error: string | null;
  messages?: Array<{ role: string; content: string }>;
  max_turns?: number;
  failed_parse_reward?: number;
  terminate_on_parse_error?: boolean;
  context_overflow_reward?: number;
}
let reference: {
  shipped: Fields[];
  shipped_limit_1: Fields[];
  rows: Fields[];
  test_ids: unknown[][];
  setup: SetupOut[];
  tool: Array<{ contents: string[]; calls: unknown[] }>;
  reward: Array<{ reward: number; metrics: Record<string, number>; calls: unknown[] }>;
  spec: unknown;
  aggregate: Array<{ score: number; num_examples: number; num_correct: number; metrics: Record<string, number> }>;
  system_prompt: string;
  max_turns: number;
};

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({ shipped: SHIPPED, rows: ROWS, test_ids: TEST_IDS, setup: SETUP, tool: TOOL, reward: REWARD, aggregate: AGGREGATE });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'eval_swe_bench_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 180_000);

const fields = (t: SweBenchTask): Fields => ({
  example_id: t.taskName,
  instance_id: t.instanceId,
  repo: t.repo,
  base_commit: t.baseCommit,
  problem_statement: t.problemStatement,
  hints_text: t.hintsText,
  test_patch: t.testPatch,
  fail_to_pass: t.failToPass,
});

/** A sandbox answering the n-th operation with results[n] (the last repeats; null fails), keeping the calls as the reference's fake does. */
function fakeSandbox(results: Array<{ exit_code: number; stdout: string; stderr: string } | null>) {
  const calls: unknown[] = [];
  const next = () => results[Math.min(calls.length - 1, results.length - 1)];
  const sandbox = {
    sandboxId: 'fake',
    async runCommand(command: string, opts: { workdir?: string | null; timeout?: number; maxOutputBytes?: number | null } = {}): Promise<SandboxResult> {
      calls.push({ op: 'run', command, workdir: opts.workdir ?? null, timeout: opts.timeout ?? 60, max_output_bytes: opts.maxOutputBytes ?? null });
      const r = next();
      if (!r) throw new Error('sandbox gone');
      return { exitCode: r.exit_code, stdout: r.stdout, stderr: r.stderr, metrics: {} };
    },
    async writeFile(path: string, content: string | Uint8Array): Promise<SandboxResult> {
      calls.push({ op: 'write', path, content: typeof content === 'string' ? content : Buffer.from(content).toString('utf8') });
      return { exitCode: 0, stdout: '', stderr: '', metrics: {} };
    },
  } as unknown as SandboxInterface;
  return { sandbox, calls };
}

const task = (c: (typeof SETUP)[number]): SweBenchTask => ({
  taskName: 'e',
  instanceId: 'i',
  repo: c.repo,
  baseCommit: c.base_commit,
  problemStatement: c.problem_statement,
  hintsText: c.hints_text,
  testPatch: c.test_patch,
  failToPass: ['t'],
  at: 'case',
});

describe('swe_bench beside the reference', () => {
  it("make_envs' fields on the shipped rows, all and --limit 1", async () => {
    const all = (await loadTerminalEval({ suite: 'swe_bench', data_path: null, limit: null })).tasks as SweBenchTask[];
    expect(all.map(fields)).toEqual(reference.shipped);
    const one = (await loadTerminalEval({ suite: 'swe_bench', data_path: null, limit: 1 })).tasks as SweBenchTask[];
    expect(one.map(fields)).toEqual(reference.shipped_limit_1);
    expect(reference.shipped).toHaveLength(2);
  });

  it('edge rows: FAIL_TO_PASS shapes, the lowercase column first, skipped rows, no instance id or repo', () => {
    const ours = ROWS.map((r, i) => parseSweBenchRow(r, `row ${i}`)).filter((t) => t !== null);
    expect(ours.map(fields)).toEqual(reference.rows);
  });

  it('_parse_test_ids', () => {
    expect(TEST_IDS.map(parseTestIds)).toEqual(reference.test_ids);
  });

  it("the setup: clone, fetch, checkout (300 s, quoted), the test patch and its --3way fallback; a failing command's reason", async () => {
    for (const [i, c] of SETUP.entries()) {
      const ref = reference.setup[i];
      const { sandbox, calls } = fakeSandbox(c.results);
      const error = await setUpRepo(sandbox, task(c), null).then(
        () => null,
        (e: Error) => e.message,
      );
      expect(calls, `case ${i}`).toEqual(ref.calls);
      if (ref.error === null) expect(error).toBeNull();
      else expect(error).toBe(`${ref.error} (no terminal.repos_dir)`);
    }
  });

  it('the system prompt (the eval\'s over it unless null or empty), the user message (hints cut at 2000 code points, blank hints left out), MAX_TURNS and the env settings', () => {
    for (const [i, c] of SETUP.entries()) {
      const ref = reference.setup[i];
      if (ref.error !== null) continue;
      expect(ref.messages).toEqual([
        { role: 'system', content: sweBenchSystemPrompt(c.system_prompt ?? null) },
        { role: 'user', content: sweBenchUserPrompt(task(c)) },
      ]);
      expect(ref.max_turns).toBe(SWE_BENCH_MAX_TURNS);
      expect({ failedParseReward: ref.failed_parse_reward, terminateOnParseError: ref.terminate_on_parse_error, contextOverflowReward: ref.context_overflow_reward }).toEqual(SWE_BENCH_ENV_SETTINGS);
    }
    expect(SWE_BENCH_SYSTEM_PROMPT).toBe(reference.system_prompt);
    expect(SWE_BENCH_MAX_TURNS).toBe(reference.max_turns);
  });

  it('the bash tool: its spec, the command it runs (pager and progress settings, /workspace/repo, 120 s, 16000 bytes) and its JSON output', async () => {
    expect(sweBenchBashTool(fakeSandbox([null]).sandbox).toSpec()).toEqual(reference.spec);
    for (const [i, c] of TOOL.entries()) {
      const { sandbox, calls } = fakeSandbox([c]);
      const result = await sweBenchBashTool(sandbox).run({ arguments: { command: c.command }, callId: 'x' });
      expect(result.messages.map((m) => m.content), c.command).toEqual(reference.tool[i].contents);
      expect(calls).toEqual(reference.tool[i].calls);
    }
  });

  it("the reward: pytest on the quoted FAIL_TO_PASS ids, exit 0 → 1; correct, num_turns, num_tests_total; no tests", async () => {
    for (const [i, c] of REWARD.entries()) {
      const { sandbox, calls } = fakeSandbox([c.run]);
      const [reward, metrics] = await sweBenchReward(sandbox, c.fail_to_pass)(c.history);
      expect({ reward, metrics, calls }).toEqual(reference.reward[i]);
    }
  });

  it('the aggregate: resolve rate and average turns (no task skipped: the same denominator)', () => {
    for (const [i, c] of AGGREGATE.entries()) {
      const results = c.rewards.map((reward, j) => ({ reward, status: reward > 0 ? 'PASS' : 'FAIL', reward_details: c.metrics[j] }) as unknown as TerminalTaskResult);
      const ours = aggregateSweBench(results);
      const ref = reference.aggregate[i];
      expect({ score: ours.score, num_examples: ours.num_examples, num_correct: ours.num_correct, metrics: { 'swe_bench/resolve_rate': ours['swe_bench/resolve_rate'], 'swe_bench/avg_turns': ours['swe_bench/avg_turns'] } }).toEqual(ref);
    }
  });
});
