// Code problems in the public DeepCoder / LiveCodeBench row layout (agentica-org/DeepCoder-Preview-Dataset):
// `problem` (or `question`/`prompt`), `tests` (or `ground_truth`; a list of LiveCodeBench tests or
// TACO's `{inputs, outputs[, fn_name]}`, either possibly as a JSON string), `starter_code`,
// `metadata` (`func_name` for functional tests). Normalised as the reference's code_env.py does:
// rows without tests or a question are dropped, and the question is wrapped in LiveCodeBench's prompt.
import { readFileSync } from 'node:fs';
import { DataFormatError } from '../../../errors.js';
import { tacoToLcbFormat, type CodeTest } from './grading.js';
import { fetchLiveCodeBenchSystemPrompt } from './lcb.js';

/** The reference's DeepcoderTask. */
export interface CodeTask {
  problem: string;
  tests: CodeTest[];
  starterCode: string | null;
}

function ensureDict(metadata: unknown): Record<string, unknown> {
  if (typeof metadata === 'string') {
    try {
      metadata = JSON.parse(metadata);
    } catch {
      return {};
    }
  }
  return metadata && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, unknown>) : {};
}

/** The reference's _normalize_tests. */
export function normalizeTests(rawTests: unknown, metadata: Record<string, unknown>): CodeTest[] {
  let tests = rawTests;
  if (typeof tests === 'string') {
    try {
      tests = JSON.parse(tests);
    } catch {
      return [];
    }
  }
  if (tests && typeof tests === 'object' && !Array.isArray(tests) && 'inputs' in tests && 'outputs' in tests) tests = tacoToLcbFormat(tests as Parameters<typeof tacoToLcbFormat>[0]);
  if (tests && typeof tests === 'object' && !Array.isArray(tests)) tests = [tests];
  const out: CodeTest[] = [];
  for (const test of Array.isArray(tests) ? tests : []) {
    if (!test || typeof test !== 'object' || Array.isArray(test)) continue;
    const t = test as Record<string, unknown>;
    const testtype = (t.testtype as CodeTest['testtype'] | undefined) || 'stdin_stdout';
    const testMetadata = ensureDict(t.metadata ?? {});
    if (testtype === 'functional') {
      const funcName = testMetadata.func_name ?? metadata.func_name;
      if (funcName != null) testMetadata.func_name = String(funcName);
    }
    out.push({
      input: String(t.input ?? ''),
      output: String(t.output ?? ''),
      testtype,
      metadata: (Object.keys(testMetadata).length ? testMetadata : { func_name: null }) as CodeTest['metadata'],
    });
  }
  return out;
}

/** The reference's _build_question: the problem inside LiveCodeBench's prompt; null without one. */
function buildQuestion(row: Record<string, unknown>): string | null {
  const question = row.question || row.prompt || row.problem;
  if (typeof question !== 'string' || !question.trim()) return null;
  const starter = row.starter_code;
  return typeof starter === 'string' && starter.trim() ? fetchLiveCodeBenchSystemPrompt(question, starter) : fetchLiveCodeBenchSystemPrompt(question);
}

export function codeTaskFromRow(row: Record<string, unknown>): CodeTask | null {
  const tests = normalizeTests(row.tests || row.ground_truth, ensureDict(row.metadata ?? {}));
  if (!tests.length) return null;
  const problem = buildQuestion(row);
  if (problem === null) return null;
  const starter = row.starter_code;
  return { problem, tests, starterCode: typeof starter === 'string' && starter.trim() ? starter : null };
}

/** Rows from a JSON array or JSONL file; a line that is not a JSON object is refused naming its place. */
export function loadCodeTasks(file: string, shownAs: string): CodeTask[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new DataFormatError(`${shownAs}: cannot read (${(err as Error).message})`);
  }
  const rows: Array<[string, unknown]> = [];
  if (text.trimStart().startsWith('[')) {
    let all: unknown;
    try {
      all = JSON.parse(text);
    } catch (err) {
      throw new DataFormatError(`${shownAs}: not JSON (${(err as Error).message})`);
    }
    if (!Array.isArray(all)) throw new DataFormatError(`${shownAs}: a JSON file must hold an array of problems`);
    all.forEach((row, i) => rows.push([`${shownAs}[${i}]`, row]));
  } else {
    text.split('\n').forEach((line, i) => {
      if (!line.trim()) return;
      try {
        rows.push([`${shownAs}:${i + 1}`, JSON.parse(line)]);
      } catch (err) {
        throw new DataFormatError(`${shownAs}:${i + 1}: not JSON (${(err as Error).message})`);
      }
    });
  }
  const tasks: CodeTask[] = [];
  for (const [where, row] of rows) {
    if (!row || typeof row !== 'object' || Array.isArray(row)) throw new DataFormatError(`${where}: a problem must be a JSON object`);
    const task = codeTaskFromRow(row as Record<string, unknown>);
    if (task) tasks.push(task);
  }
  if (!tasks.length) throw new DataFormatError(`${shownAs}: no problem with a question and tests`);
  return tasks;
}
