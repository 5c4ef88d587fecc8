// swe_bench episodes (cookbook/eval/suites/swe-bench*.ts) on the real episode sandbox, the real
// qwen3 renderer and tokenizer and a real run store, against the shipped rows and the mirrors
// test/fixtures/swe_bench_repos_gen.sh makes, with a sampler that answers as a model that knows
// the fix: each row's gold patch applied by one bash call, then a final message — PASS from
// pytest's exit code on FAIL_TO_PASS; not acting is FAIL (the test patch's test fails at the base
// commit); the same episode at the same eval position replays with no command run; a repo that is
// not among the mirrors is SKIPPED with the clone's exit and stderr as the reason.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleResponse, SamplingSession } from '../../../src/backends/types.js';
import { aggregateSweBench, skippedTasks, SWE_BENCH_SYSTEM_PROMPT, sweBenchUserPrompt, type SweBenchTask } from '../../../src/cookbook/eval/suites/swe-bench.js';
import { loadTerminalEval, TerminalEvalSchema } from '../../../src/cookbook/eval/suites/terminal.js';
import { evaluateTerminalTask, type TerminalEpisodeSetup } from '../../../src/cookbook/eval/suites/terminal-run.js';
import { findMirror } from '../../../src/cookbook/eval/suites/swe-bench-env.js';
import { rendererForModel } from '../../../src/cookbook/renderers/for-model.js';
import { runStoreOnce } from '../../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../../src/cookbook/run-store.js';
import { episodeSandboxAvailable } from '../../../src/cookbook/sandbox/episode.js';
import type { Tokenizer } from '../../../src/cookbook/tokenizer.js';
import { toolDeclaring, type ToolDeclaringRenderer } from '../../../src/cookbook/tool-use/index.js';
import { fullTier } from '../../support/tier.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const ROWS = join(ROOT, 'data', 'eval', 'swe_bench', 'data', 'test-00000-of-00001.jsonl');
const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'h56h-episode-'));
  dirs.push(d);
  return d;
};

let renderer: ToolDeclaringRenderer;
let tokenizer: Tokenizer;
let tasks: SweBenchTask[];
let reposDir: string;
/** Each shipped row's gold patch, by instance id. */
const patches = new Map<string, string>();
beforeAll(async () => {
  const r = await rendererForModel('tiny-qwen3');
  renderer = toolDeclaring(r.renderer, 'test');
  tokenizer = r.tokenizer;
  reposDir = tempDir();
  execFileSync(join(ROOT, 'test', 'fixtures', 'swe_bench_repos_gen.sh'), [reposDir]);
  tasks = (await loadTerminalEval({ suite: 'swe_bench', data_path: null, limit: null })).tasks as SweBenchTask[];
  for (const line of readFileSync(ROWS, 'utf8').trim().split('\n')) {
    const row = JSON.parse(line) as { instance_id: string; patch: string };
    patches.set(row.instance_id, row.patch);
  }
});

/** A sampler that answers the given turns in order, ending each with the renderer's stop token; it keeps each request's decoded prompt. */
function scriptedSession(turns: string[]): SamplingSession & { prompts: string[] } {
  const prompts: string[] = [];
  return {
    samplingSessionId: 'scripted',
    prompts,
    async sample(prompt): Promise<SampleResponse> {
      const text = turns[Math.min(prompts.length, turns.length - 1)];
      prompts.push(tokenizer.decode(prompt.chunks.flatMap((c) => ('tokens' in c ? c.tokens : []))));
      return { sequences: [{ tokens: tokenizer.encode(`${text}<|im_end|>`, { addSpecialTokens: false }), stop_reason: 'stop' }] };
    },
    computeLogprobs: () => Promise.reject(new Error('not used')),
  };
}

function setup(session: SamplingSession, logPath: string, repos: string | null): TerminalEpisodeSetup {
  const store = new RunStore(logPath);
  return {
    session,
    openSession: () => Promise.reject(new Error('no side samplers here')),
    policyModel: { model_name: 'tiny-qwen3' },
    renderer,
    tokenizer,
    sampling: { seed: 7, max_tokens: 64, temperature: 0 },
    terminal: TerminalEvalSchema.parse({ max_turns: 4, sandbox_backend: 'local', repos_dir: repos }),
    suite: 'swe_bench',
    onceFor: (index) => runStoreOnce(store, ['eval', 0, index]),
    writeTrajectory: (task) => `${task}.txt`,
  };
}

const call = (command: string) => `<tool_call>\n${JSON.stringify({ name: 'bash', arguments: { command } })}\n</tool_call>`;
const applyGold = (patch: string) => call(`cd /workspace/repo && cat > /tmp/fix.diff <<'PATCH'\n${patch}PATCH\ngit apply /tmp/fix.diff && git status --short`);

describe('swe_bench mirrors', () => {
  it('<owner>__<name> or <owner>/<name>, bare (.git) or not; none for a repo not there', () => {
    const dir = tempDir();
    execFileSync('git', ['clone', '-q', '--bare', join(reposDir, 'cookbook-fixtures__tiny_calc'), join(dir, 'a', 'b.git')]);
    execFileSync('git', ['clone', '-q', join(reposDir, 'cookbook-fixtures__tiny_text'), join(dir, 'c__d')]);
    expect(findMirror(reposDir, 'cookbook-fixtures/tiny_calc')).toBe(join(reposDir, 'cookbook-fixtures__tiny_calc'));
    expect(findMirror(dir, 'a/b')).toBe(join(dir, 'a', 'b.git'));
    expect(findMirror(dir, 'c/d')).toBe(join(dir, 'c__d'));
    expect(findMirror(dir, 'a/c')).toBeNull();
    expect(findMirror(dir, 'no-slash')).toBeNull();
  });
});

describe.skipIf(unavailable)('swe_bench episodes', { timeout: 180_000 }, () => {
  it("each shipped row fixed by its gold patch: PASS from pytest's exit code, with the reference's prompts and metrics", async () => {
    const logPath = tempDir();
    expect(tasks.map((t) => t.taskName)).toEqual(['swe_bench_cookbook-fixtures__tiny_calc-1', 'swe_bench_cookbook-fixtures__tiny_text-1']);
    const runs = await Promise.all(
      tasks.map(async (task, index) => {
        const session = scriptedSession([applyGold(patches.get(task.instanceId)!), 'Fixed.']);
        return { session, r: await evaluateTerminalTask(index, task, setup(session, logPath, reposDir)) };
      }),
    );
    for (const [index, task] of tasks.entries()) {
      const { session, r } = runs[index];
      expect(r, `${r.id}: ${r.error}`).toMatchObject({ index, id: task.taskName, status: 'PASS', correct: true, reward: 1, turns: 2, error: null });
      expect(r.reward_details).toEqual({ correct: 1, num_turns: 2, num_tests_total: 1, 'stop/completed': 1 });
      expect(r.test_verdict).toMatch(/^reward 1 · pytest exit 0\n[^]*1 passed/);
      const [first, second] = session.prompts;
      expect(first).toContain(SWE_BENCH_SYSTEM_PROMPT);
      expect(first).toContain(`<|im_start|>user\n${sweBenchUserPrompt(task)}<|im_end|>`);
      expect(first).toContain('"description": "Execute a bash command in the repository sandbox."');
      // The fix leaves the source changed and the test patch applied.
      expect(second).toMatch(/\{"exit_code": 0, "stdout": "( M [a-z_/]+\.py\\n){2}", "stderr": ""\}/);
      expect(second).toContain(' M tests/test_');
    }
  });

  // The durable sandbox's replay is the terminal suites' (checked in their gate tests); here in the fuller tier.
  it.runIf(fullTier)('not acting is FAIL; replayed at the same position, the same result with no command run', async () => {
    const logPath = tempDir();
    const execLog = join(logPath, 'exec.jsonl');
    process.env.COOKBOOK_SANDBOX_EXEC_LOG = execLog;
    const ran = () => (existsSync(execLog) ? readFileSync(execLog, 'utf8').trim().split('\n').filter(Boolean).length : 0);
    try {
      const look = call('printenv PAGER TQDM_DISABLE; pwd; git log --format=%H -1; python -m pytest --version');
      const first = scriptedSession([look, 'I am done.']);
      const r = await evaluateTerminalTask(3, tasks[0], setup(first, logPath, reposDir));
      expect(r).toMatchObject({ status: 'FAIL', reward: 0, turns: 2, error: null });
      expect(r.reward_details).toEqual({ correct: 0, num_turns: 2, num_tests_total: 1, 'stop/completed': 1 });
      expect(r.test_verdict).toMatch(/^reward 0 · pytest exit 1\n[^]*1 failed/);
      expect(first.prompts[1]).toContain(`"stdout": "cat\\n1\\n/workspace/repo\\n${tasks[0].baseCommit}\\npytest 9.`);
      const commands = ran();
      const again = scriptedSession([look, 'I am done.']);
      const replayed = await evaluateTerminalTask(3, tasks[0], setup(again, logPath, reposDir));
      expect({ ...replayed, seconds: 0 }).toEqual({ ...r, seconds: 0 });
      expect(again.prompts).toEqual(first.prompts);
      expect(ran()).toBe(commands);
    } finally {
      delete process.env.COOKBOOK_SANDBOX_EXEC_LOG;
    }
  });

  it('a repo without a mirror (and no network for GitHub) is SKIPPED with the failed command and its stderr, out of the score', async () => {
    const logPath = tempDir();
    const emptyRepos = tempDir();
    const session = scriptedSession(['never asked']);
    const [missing, noRepos] = await Promise.all([
      evaluateTerminalTask(0, tasks[0], setup(session, logPath, emptyRepos)),
      evaluateTerminalTask(1, tasks[1], setup(session, logPath, null)),
    ]);
    expect(session.prompts).toEqual([]);
    expect(missing).toMatchObject({ status: 'SKIPPED', correct: false, reward: 0, turns: 0 });
    expect(missing.error).toMatch(/^swe_bench setup failed \(exit 128\): git clone --depth=50 https:\/\/github\.com\/cookbook-fixtures\/tiny_calc\.git \/workspace\/repo {2}stderr=.+/s);
    expect(missing.error).toContain(`(no mirror of cookbook-fixtures/tiny_calc in ${emptyRepos})`);
    expect(noRepos.error).toMatch(/\(no terminal\.repos_dir\)$/);
    const passed = { ...missing, id: 'x', status: 'PASS' as const, reward: 1, error: null, reward_details: { num_turns: 3 } };
    expect(aggregateSweBench([missing, noRepos, passed])).toEqual({
      score: 1,
      'swe_bench/resolve_rate': 1,
      'swe_bench/avg_turns': 3,
      num_correct: 1,
      num_examples: 1,
      num_error: 0,
      num_skipped: 2,
      num_tasks: 3,
    });
    expect(skippedTasks([missing, passed]).map((s) => s.id)).toEqual([tasks[0].taskName]);
  });
});
