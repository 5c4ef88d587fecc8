// The agentic `swe_bench` suite (reference 0.6.1 eval/benchmarks/_swe_bench.py): rows of
// princeton-nlp/SWE-bench_Verified, each one agent episode in a sandbox holding the row's repo at
// its base commit with the test patch applied (swe-bench-env.ts), graded by the exit code of
// pytest on the row's FAIL_TO_PASS tests. This module reads the rows into tasks, builds the
// prompts, and aggregates: the resolve rate over the tasks that ran, with the tasks whose repo
// could not be set up (SKIPPED) counted and listed beside it, never silently dropped.
import { DataFormatError } from '../../errors.js';
import { HfSourceSchema } from '../../hf/config.js';
import { readRows } from '../../hf/readers.js';
import { splitFiles } from '../../hf/source.js';
import { exampleId } from './gsm8k.js';
import { summaryLine, type TerminalTaskResult } from './terminal-results.js';

export const SWE_BENCH_SUITE = {
  name: 'swe_bench',
  description: 'SWE-bench Verified rows, one agent episode each in the repo at its base commit (bash tool, FAIL_TO_PASS pytest grades); resolve rate',
  data: 'data/eval/swe_bench (jsonl of instance_id, repo, base_commit, problem_statement, hints_text, test_patch, FAIL_TO_PASS), a folder or file in that layout, or the Hub id princeton-nlp/SWE-bench_Verified',
  hubId: 'princeton-nlp/SWE-bench_Verified',
  split: 'test',
} as const;

/** The reference's MAX_TURNS (the suite's default terminal.max_turns). */
export const SWE_BENCH_MAX_TURNS = 100;

export const SWE_BENCH_SYSTEM_PROMPT = `You are an autonomous software engineer. Your task is to fix a bug in a code repository by editing source files.

IMPORTANT: You MUST call the bash tool in EVERY response. If you respond without a tool call, the task will end immediately. Keep working until you have fixed the issue.

## Workflow

1. **Explore**: Find relevant files with grep and find
2. **Reproduce**: Write and run a script that triggers the bug
3. **Edit**: Fix the source code using sed or a python script
4. **Verify**: Run your reproduction script to confirm the fix
5. **Test**: Run the test suite to check for regressions

## Editing files

Use sed for small edits:
\`\`\`
cd /workspace/repo && sed -i 's/old_text/new_text/g' path/to/file.py
\`\`\`

Use a python script for larger edits:
\`\`\`
cd /workspace/repo && python3 -c "
content = open('path/to/file.py').read()
content = content.replace('old_text', 'new_text')
open('path/to/file.py', 'w').write(content)
"
\`\`\`

Use cat with heredoc to create new files:
\`\`\`
cat <<'EOF' > /workspace/repo/path/to/new_file.py
import foo
EOF
\`\`\`

## Rules

- The repository is at /workspace/repo
- ALWAYS prefix commands with \`cd /workspace/repo &&\`
- MODIFY only source code files, NOT tests or configuration
- Each command runs in a fresh subshell — cd is not persistent
- PAGER=cat (no interactive paging)
- Do NOT use interactive editors (vi, nano, etc.)`;

/** The reference's `self.system_prompt or _SYSTEM_PROMPT`: the eval's system_prompt unless null or empty. */
export const sweBenchSystemPrompt = (override: string | null) => override || SWE_BENCH_SYSTEM_PROMPT;

export interface SweBenchTask {
  /** The example id: swe_bench_<instance_id> (a hash of the problem statement without one). */
  taskName: string;
  instanceId: string;
  /** owner/name on GitHub. */
  repo: string;
  baseCommit: string;
  problemStatement: string;
  hintsText: string;
  testPatch: string;
  failToPass: unknown[];
  /** Where the row came from, for messages. */
  at: string;
}

export const isSweBenchTask = (t: object): t is SweBenchTask => 'baseCommit' in t;

/** Python's str.strip() (its whitespace is Unicode's, as JS's trim()). */
const pyStrip = (s: string) => s.trim();

/** The reference's _parse_test_ids: a list as it is, a JSON list's items, else the stripped string alone, else none. */
export function parseTestIds(raw: unknown): unknown[] {
  if (Array.isArray(raw)) return raw;
  if (typeof raw === 'string') {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (Array.isArray(parsed)) return parsed;
    } catch {
      // not JSON: one test id
    }
    if (pyStrip(raw)) return [pyStrip(raw)];
  }
  return [];
}

/** Python's s[:n] on code points. */
const pyHead = (s: string, n: number) => [...s].slice(0, n).join('');

/** The reference's user message: the repo, the problem statement, the hints cut at 2000 characters. */
export function sweBenchUserPrompt(task: Pick<SweBenchTask, 'repo' | 'problemStatement' | 'hintsText'>): string {
  const hints = pyStrip(task.hintsText) ? `\n\n## Hints\n${pyHead(task.hintsText, 2000)}` : '';
  return (
    `## Repository: ${task.repo}\n\n` +
    `## Problem Statement\n${task.problemStatement}` +
    `${hints}\n\n` +
    'The repository is checked out at `/workspace/repo`. ' +
    'Explore the codebase, find and fix the issue.'
  );
}

/** Python's row.get(key, fallback) for a text column (a null cell is the reference's None: no value here). */
const text = (row: Record<string, unknown>, key: string, fallback: string): string => {
  const v = key in row ? row[key] : fallback;
  return v === null || v === undefined ? '' : String(v);
};

/** A row's task, or null when the reference skips it (no problem statement, no base commit). */
export function parseSweBenchRow(row: Record<string, unknown>, at: string): SweBenchTask | null {
  const instanceId = text(row, 'instance_id', '');
  const problemStatement = text(row, 'problem_statement', '');
  const baseCommit = text(row, 'base_commit', '');
  if (!problemStatement || !baseCommit) return null;
  const rawTests = 'fail_to_pass' in row ? row.fail_to_pass : 'FAIL_TO_PASS' in row ? row.FAIL_TO_PASS : '[]';
  return {
    taskName: instanceId ? `swe_bench_${instanceId}` : exampleId(SWE_BENCH_SUITE.name, problemStatement),
    instanceId,
    repo: text(row, 'repo', 'unknown'),
    baseCommit,
    problemStatement,
    hintsText: text(row, 'hints_text', ''),
    testPatch: text(row, 'test_patch', ''),
    failToPass: parseTestIds(rawTests),
    at,
  };
}

/** The tasks of the rows at `dataPath` (split test), of the first `limit` rows in file order (the reference's limit_dataset). */
export async function loadSweBenchTasks(dataPath: string, limit: number | null): Promise<SweBenchTask[]> {
  const source = HfSourceSchema.parse({ path: dataPath, split: SWE_BENCH_SUITE.split });
  const tasks: SweBenchTask[] = [];
  let rows = 0;
  outer: for (const file of await splitFiles(source, SWE_BENCH_SUITE.split)) {
    for await (const { data, at } of readRows(file)) {
      if (limit !== null && rows >= limit) break outer;
      rows++;
      const task = parseSweBenchRow(data, at);
      if (task) tasks.push(task);
    }
  }
  if (!tasks.length) throw new DataFormatError(`${dataPath}: no swe_bench tasks in split "${SWE_BENCH_SUITE.split}" (rows of instance_id, repo, base_commit, problem_statement, test_patch, FAIL_TO_PASS)`);
  return tasks;
}

/**
 * The reference's aggregate (resolve rate = resolved / tasks, avg_turns over the tasks' num_turns)
 * over the tasks that ran; SKIPPED tasks (a repo that could not be cloned) are out of the
 * denominator and counted in num_skipped, and results.json lists them with their reasons.
 */
export function aggregateSweBench(results: readonly TerminalTaskResult[]): Record<string, number> {
  const ran = results.filter((r) => r.status !== 'SKIPPED');
  const n = ran.length;
  const resolved = ran.filter((r) => r.reward > 0).length;
  const rate = n ? resolved / n : 0;
  const avgTurns = n ? ran.reduce((s, r) => s + (r.reward_details.num_turns ?? 0), 0) / n : 0;
  return {
    score: rate,
    'swe_bench/resolve_rate': rate,
    'swe_bench/avg_turns': avgTurns,
    num_correct: resolved,
    num_examples: n,
    num_error: ran.filter((r) => r.status === 'ERROR').length,
    num_skipped: results.length - n,
    num_tasks: results.length,
  };
}

/** results.json's list of the tasks that did not run, with why. */
export const skippedTasks = (results: readonly TerminalTaskResult[]) =>
  results.filter((r) => r.status === 'SKIPPED').map((r) => ({ id: r.id, reason: r.error ?? '' }));

/** What results.md adds under the metrics table: the per-task lines, the resolve rate with its denominator, and each skipped task with why. */
export function sweBenchTable(results: readonly TerminalTaskResult[]): string {
  const m = aggregateSweBench(results);
  const header = `${'task'.padEnd(40)} ${'reward'.padStart(7)} ${'turns'.padStart(6)} ${'time'.padStart(8)} ${'status'.padStart(7)}`;
  const rate = `swe_bench: resolved ${m.num_correct}/${m.num_examples} (${(100 * m.score).toFixed(1)}%) · ${m.num_skipped} of ${m.num_tasks} tasks skipped`;
  const skipped = skippedTasks(results).map((s) => `- SKIPPED ${s.id}: ${s.reason}`);
  return ['```', header, ...results.map(summaryLine), '```', '', rate, ...(skipped.length ? ['', ...skipped] : [])].join('\n');
}
