// The agentic `terminal_bench` suite (reference 0.6.1 eval/benchmarks/_terminal_bench.py): rows of
// the HF dataset ia03/terminal-bench (task_id, task_yaml, a gzip'd tar `archive` of the task
// folder), each one agent episode in a generic sandbox holding the task's files under /app
// (terminal-bench-env.ts), graded by the exit code of the task's run-tests.sh. This module reads
// the rows (the hf loader's layouts: the shipped sample, a folder or file, a Hub id) into tasks.
import { DataFormatError } from '../../errors.js';
import { HfSourceSchema } from '../../hf/config.js';
import { readRows } from '../../hf/readers.js';
import { splitFiles } from '../../hf/source.js';
import { exampleId } from './gsm8k.js';
import { readTaskArchive } from './terminal-bench-archive.js';
import { yamlInstruction } from './terminal-bench-yaml.js';

export const TERMINAL_BENCH_SUITE = {
  name: 'terminal_bench',
  description: 'Terminal-Bench rows (ia03/terminal-bench), one agent episode each in a generic sandbox (bash tool, run-tests.sh grades); pass rate',
  data: 'data/eval/terminal_bench (parquet of task_id, task_yaml, archive), a folder or file in that layout, or the Hub id ia03/terminal-bench',
  hubId: 'ia03/terminal-bench',
  split: 'test',
} as const;

/** The reference's MAX_TURNS (the suite's default terminal.max_turns). */
export const TERMINAL_BENCH_MAX_TURNS = 100;

export interface TerminalBenchTask {
  /** The example id: terminal_bench_<task_id> (the reference's; a hash of the instruction without one). */
  taskName: string;
  taskId: string;
  instruction: string;
  /** run-tests.sh's text, written to /app/run_tests.sh; '' when the row has none (reward 0). */
  testScript: string;
  /** Files written under /app before the episode: every archive file but the solution. */
  setupFiles: Map<string, string>;
  /** Where the row came from, for messages. */
  at: string;
}

export const isTerminalBenchTask = (t: object): t is TerminalBenchTask => 'setupFiles' in t;

/** Python's str() of a column value (None → "None"). */
const pyStr = (v: unknown): string => (v === null || v === undefined ? 'None' : String(v));

/** Python's row.get(k1, row.get(k2, ...)): the first key the row has (its value even when null), else `last`. */
function firstPresent(row: Record<string, unknown>, keys: string[], last: unknown): unknown {
  for (const k of keys) if (k in row) return row[k];
  return last;
}

/** The reference's _parse_task: (instruction, test script, setup files) of a row. */
export function parseTerminalBenchRow(row: Record<string, unknown>): { instruction: string; testScript: string; setupFiles: Map<string, string>; archiveError: string | null } {
  let instruction = typeof row.task_yaml === 'string' && row.task_yaml ? yamlInstruction(row.task_yaml) : '';
  let testScript = '';
  let setupFiles = new Map<string, string>();
  let archiveError: string | null = null;
  if (row.archive !== undefined && row.archive !== null) {
    const archive = readTaskArchive(row.archive);
    ({ testScript, setupFiles } = archive);
    archiveError = archive.error;
  }
  if (!instruction) {
    // A null column is Python's None: no instruction, so the row is skipped.
    const fallback = firstPresent(row, ['task', 'instruction', 'description'], '');
    instruction = typeof fallback === 'string' ? fallback : fallback === null || fallback === undefined ? '' : pyStr(fallback);
  }
  if (!testScript) testScript = pyStr(firstPresent(row, ['test_script', 'run_tests'], ''));
  return { instruction, testScript, setupFiles, archiveError };
}

/**
 * The tasks of the rows at `dataPath` (split test), the first `limit` in file order (the
 * reference's limit_dataset); a row without an instruction is left out, as the reference skips it.
 */
export async function loadTerminalBenchTasks(dataPath: string, limit: number | null): Promise<TerminalBenchTask[]> {
  const source = HfSourceSchema.parse({ path: dataPath, split: TERMINAL_BENCH_SUITE.split });
  const tasks: TerminalBenchTask[] = [];
  let rows = 0;
  outer: for (const file of await splitFiles(source, TERMINAL_BENCH_SUITE.split)) {
    for await (const { data, at } of readRows(file, undefined, { bytes: true })) {
      if (limit !== null && rows >= limit) break outer;
      rows++;
      const { instruction, testScript, setupFiles } = parseTerminalBenchRow(data);
      if (!instruction) continue;
      const taskId = data.task_id === undefined || data.task_id === null ? '' : String(data.task_id);
      const taskName = taskId ? `terminal_bench_${taskId}` : exampleId(TERMINAL_BENCH_SUITE.name, instruction);
      tasks.push({ taskName, taskId, instruction, testScript, setupFiles, at });
    }
  }
  if (!tasks.length) throw new DataFormatError(`${dataPath}: no terminal_bench tasks in split "${TERMINAL_BENCH_SUITE.split}" (rows of task_id, task_yaml, archive)`);
  return tasks;
}
