// Code problems in the public DeepCoder / LiveCodeBench row layout (agentica-org/DeepCoder-Preview-Dataset):
// `problem` (or `question`/`prompt`), `tests` (or `ground_truth`; a list of LiveCodeBench tests or
// TACO's `{inputs, outputs[, fn_name]}`, either possibly as a JSON string), `starter_code`,
// `metadata` (`func_name` for functional tests). Normalised as the reference's code_env.py does:
// rows without tests or a question are dropped, and the question is wrapped in LiveCodeBench's prompt.
// Rows come from a JSONL / JSON file or from the dataset itself through an `hf` source (its subsets
// and splits concatenated and the train rows shuffled as the reference's load_deepcoder_tasks does).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { DataFormatError } from '../../../errors.js';
import { HfSourceSchema } from '../../../hf/config.js';
import { mappedRows, shuffled, splitFiles, type HfLoadOptions } from '../../../hf/source.js';
import { PyFloat, pyFloatRepr } from '../../../pyjson.js';
import { pyStrRepr, pyTruthy } from '../../../renderers/content.js';
import { pyJsonLoads, PyJsonDecodeError } from '../../../renderers/py-json.js';
import type { CodeTest } from './grading.js';
import { fetchLiveCodeBenchSystemPrompt } from './lcb.js';

/** The reference's DeepcoderTask. */
export interface CodeTask {
  problem: string;
  tests: CodeTest[];
  starterCode: string | null;
}

/**
 * A row that is not a DeepCoder problem as written (tests that are not JSON, or not a list or a
 * TACO object; a question that is not text; a functional test without its function name). The
 * reference drops some of these rows with a warning and fails on others; here it is an error
 * naming the file and row, unless the rows are skipped on purpose (`skip_bad_rows`).
 */
export class BadCodeRowError extends DataFormatError {}

// ---------------------------------------------------------------------------------------------
// Python's view of JSON values: rows decoded by JSON.parse, or by pyJsonLoads where ints and floats
// must stay apart (Map objects, bigint ints, PyFloat floats).

const isDict = (v: unknown): v is Record<string, unknown> | Map<string, unknown> =>
  v instanceof Map || (v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof PyFloat));
const has = (d: Record<string, unknown> | Map<string, unknown>, k: string) => (d instanceof Map ? d.has(k) : Object.hasOwn(d, k));
const get = (d: Record<string, unknown> | Map<string, unknown>, k: string): unknown => (d instanceof Map ? d.get(k) : d[k]);
const entries = (d: Record<string, unknown> | Map<string, unknown>): Array<[string, unknown]> => (d instanceof Map ? [...d.entries()] : Object.entries(d));
const truthy = (v: unknown) => (v instanceof Map ? v.size > 0 : v instanceof PyFloat ? v.value !== 0 : typeof v === 'bigint' ? v !== 0n : pyTruthy(v));

/** Python `repr()` of a decoded JSON value. */
function pyRepr(v: unknown): string {
  if (typeof v === 'string') return pyStrRepr(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  if (isDict(v)) return `{${entries(v).map(([k, x]) => `${pyStrRepr(k)}: ${pyRepr(x)}`).join(', ')}}`;
  return pyStr(v);
}

/** Python `str()` of a decoded JSON value (JSON.parse numbers: integral ones read as ints). */
export function pyStr(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof PyFloat || typeof v === 'number') {
    const x = v instanceof PyFloat ? v.value : v;
    if (Number.isNaN(x)) return 'nan';
    if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
    return typeof v === 'number' && Number.isInteger(x) ? (Number.isSafeInteger(x) ? String(x) : BigInt(x).toString()) : pyFloatRepr(x);
  }
  return pyRepr(v);
}

/** `json.loads(text)`: JSON.parse, or Python's decoder where the values need it (non-string tests) or JSON.parse refuses (NaN). */
function pyLoads(text: string, exact: (v: unknown) => boolean): unknown {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return pyJsonLoads(text);
  }
  return exact(v) ? v : pyJsonLoads(text);
}

/** Are all the tests' inputs and outputs strings (so JSON.parse's numbers never reach str())? */
function plainTests(v: unknown): boolean {
  const strings = (xs: unknown) => !Array.isArray(xs) || xs.every((x) => typeof x === 'string');
  if (Array.isArray(v)) return v.every((t) => !isDict(t) || ((!has(t, 'input') || typeof get(t, 'input') === 'string') && (!has(t, 'output') || typeof get(t, 'output') === 'string')));
  if (isDict(v)) return strings(get(v, 'inputs')) && strings(get(v, 'outputs')) && (!has(v, 'input') || typeof get(v, 'input') === 'string') && (!has(v, 'output') || typeof get(v, 'output') === 'string');
  return true;
}

// ---------------------------------------------------------------------------------------------
// the reference's row normalisation (recipes/code_rl/code_env.py, code_grading.py)

/** The reference's _ensure_dict (a metadata string that is not JSON reads as {}, as it warns and does). */
function ensureDict(metadata: unknown): Record<string, unknown> | Map<string, unknown> {
  if (typeof metadata === 'string') {
    try {
      metadata = pyLoads(metadata, () => true);
    } catch {
      return {};
    }
  }
  return isDict(metadata) ? metadata : {};
}

/** The reference's taco_to_lcb_format, on raw values (the str() comes after, in normalizeTests). */
function tacoToLcb(tests: Record<string, unknown> | Map<string, unknown>, at: string): Array<Map<string, unknown>> {
  const inputs = has(tests, 'inputs') ? get(tests, 'inputs') : [];
  const outputs = has(tests, 'outputs') ? get(tests, 'outputs') : [];
  if (!Array.isArray(inputs) || !Array.isArray(outputs)) throw new BadCodeRowError(`${at}: TACO tests need lists "inputs" and "outputs"`);
  const n = Math.max(inputs.length, outputs.length);
  return Array.from({ length: n }, (_, i) => {
    const input = i < inputs.length ? inputs[i] : inputs.length ? inputs[0] : '';
    let output = i < outputs.length ? outputs[i] : outputs.length ? outputs[0] : '';
    if (Array.isArray(output)) output = output.length ? output[0] : '';
    const functional = has(tests, 'fn_name');
    return new Map<string, unknown>([
      ['input', input],
      ['output', output],
      ['metadata', new Map(functional ? [['func_name', get(tests, 'fn_name')]] : [])],
      ['testtype', functional ? 'functional' : 'stdin_stdout'],
    ]);
  });
}

/**
 * The reference's _normalize_tests. `at` names the row in errors: tests that are not JSON, or
 * decode to something other than a list or an object, are refused (the reference drops the first
 * with a warning and fails on the second); so is a functional test with no function name (the
 * reference's grader would fail on it at every episode).
 */
export function normalizeTests(rawTests: unknown, metadata: Record<string, unknown> | Map<string, unknown>, at = 'row'): CodeTest[] {
  let tests = rawTests;
  if (typeof tests === 'string') {
    try {
      tests = pyLoads(tests, plainTests);
    } catch (e) {
      if (!(e instanceof PyJsonDecodeError)) throw e;
      throw new BadCodeRowError(`${at}: "tests" is not JSON (${e.message})`);
    }
  } else if (!plainTests(tests)) {
    // Already decoded (a JSONL row): re-read through Python's decoder so ints and floats stay apart.
    tests = pyJsonLoads(JSON.stringify(tests));
  }
  if (isDict(tests) && has(tests, 'inputs') && has(tests, 'outputs')) tests = tacoToLcb(tests, at);
  if (isDict(tests)) tests = [tests];
  if (truthy(tests) && !Array.isArray(tests)) {
    throw new BadCodeRowError(`${at}: "tests" must be a list of tests or a TACO {"inputs", "outputs"} object, got ${typeof tests === 'string' ? 'a string' : typeof tests}`);
  }
  const out: CodeTest[] = [];
  for (const test of Array.isArray(tests) ? tests : []) {
    if (!isDict(test)) continue;
    const testtype = truthy(get(test, 'testtype')) ? pyStr(get(test, 'testtype')) : 'stdin_stdout';
    const testMetadata = new Map(entries(ensureDict(has(test, 'metadata') ? get(test, 'metadata') : {})));
    if (testtype === 'functional') {
      const funcName = truthy(testMetadata.get('func_name')) ? testMetadata.get('func_name') : get(metadata, 'func_name');
      if (funcName !== null && funcName !== undefined) testMetadata.set('func_name', pyStr(funcName));
      else throw new BadCodeRowError(`${at}: a functional test needs "func_name" in its metadata or the row's "metadata"`);
    }
    out.push({
      input: has(test, 'input') ? pyStr(get(test, 'input')) : '',
      output: has(test, 'output') ? pyStr(get(test, 'output')) : '',
      testtype: testtype as CodeTest['testtype'],
      metadata: (testMetadata.size ? plain(testMetadata) : { func_name: null }) as CodeTest['metadata'],
    });
  }
  return out;
}

const QUESTION_COLUMNS = ['question', 'prompt', 'problem'];
const TESTS_COLUMNS = ['tests', 'ground_truth'];

/** Python's `a or b or …` over the row's columns. */
const pyOr = (row: Record<string, unknown>, columns: string[]): unknown => {
  for (const c of columns.slice(0, -1)) if (truthy(row[c])) return row[c];
  return row[columns[columns.length - 1]];
};

/** Plain values for a test's metadata (Python's decoder gives Maps, bigint ints and PyFloat floats). */
function plain(v: unknown): unknown {
  if (v instanceof Map) return Object.fromEntries([...v.entries()].map(([k, x]) => [k, plain(x)]));
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof PyFloat) return v.value;
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  return v;
}

/** The reference's _build_question: the problem inside LiveCodeBench's prompt; null without one. */
function buildQuestion(row: Record<string, unknown>, at: string): string | null {
  const question = pyOr(row, QUESTION_COLUMNS);
  if (!truthy(question)) return null;
  if (typeof question !== 'string') throw new BadCodeRowError(`${at}: the question ("problem", "question" or "prompt") must be text, got ${Array.isArray(question) ? 'a list' : typeof question}`);
  if (!question.trim()) return null;
  const starter = row.starter_code;
  return typeof starter === 'string' && starter.trim() ? fetchLiveCodeBenchSystemPrompt(question, starter) : fetchLiveCodeBenchSystemPrompt(question);
}

/**
 * One row as the reference's load_deepcoder_tasks reads it: a task, or null for a row it drops (no
 * tests, no question). A row without the layout's columns, or malformed (BadCodeRowError), throws
 * a DataFormatError naming `at`.
 */
export function codeTaskFromRow(row: Record<string, unknown>, at = 'row'): CodeTask | null {
  const columns = Object.keys(row);
  if (!QUESTION_COLUMNS.some((c) => c in row) || !TESTS_COLUMNS.some((c) => c in row)) {
    throw new DataFormatError(
      `${at}: not a DeepCoder problem: it needs a "problem" (or "question"/"prompt") and a "tests" (or "ground_truth") column; columns found: ${columns.join(', ') || 'none'}`,
    );
  }
  const tests = normalizeTests(pyOr(row, TESTS_COLUMNS), ensureDict(row.metadata ?? {}), at);
  if (!tests.length) return null;
  const problem = buildQuestion(row, at);
  if (problem === null) return null;
  const starter = row.starter_code;
  return { problem, tests, starterCode: typeof starter === 'string' && starter.trim() ? starter : null };
}

/** Rows with where each came from (`file:line`, `file row N`), turned into tasks; bad rows refused or listed in `skipped`. */
function tasksFromRows(rows: Iterable<[string, unknown]>, skipBadRows: boolean, skipped: string[]): CodeTask[] {
  const tasks: CodeTask[] = [];
  for (const [at, row] of rows) {
    if (!row || typeof row !== 'object' || Array.isArray(row)) throw new DataFormatError(`${at}: a problem must be a JSON object`);
    try {
      const task = codeTaskFromRow(row as Record<string, unknown>, at);
      if (task) tasks.push(task);
    } catch (e) {
      if (!(e instanceof BadCodeRowError)) throw e;
      if (!skipBadRows) throw new BadCodeRowError(`${e.message} (set dataset.args.skip_bad_rows to drop such rows, as the reference drops some of them)`);
      skipped.push(e.message);
    }
  }
  return tasks;
}

export interface LoadedCodeTasks {
  tasks: CodeTask[];
  /** "at: why" for each bad row dropped under skip_bad_rows. */
  skipped: string[];
}

/** Rows from a JSON array or JSONL file; a line that is not a JSON object is refused naming its place. */
export function loadCodeTasks(file: string, shownAs: string, opts: { skipBadRows?: boolean } = {}): CodeTask[] {
  return loadCodeTaskFile(file, shownAs, opts).tasks;
}

export function loadCodeTaskFile(file: string, shownAs: string, opts: { skipBadRows?: boolean } = {}): LoadedCodeTasks {
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
  const skipped: string[] = [];
  const tasks = tasksFromRows(rows, opts.skipBadRows ?? false, skipped);
  if (!tasks.length) throw new DataFormatError(`${shownAs}: no problem with a question and tests`);
  return { tasks, skipped };
}

// ---------------------------------------------------------------------------------------------
// the dataset through an `hf` source (reference: load_deepcoder_tasks)

export const DEEPCODER_DATASET = 'agentica-org/DeepCoder-Preview-Dataset';

/**
 * `dataset.args.hf` of code_rl: the DeepCoder dataset (a Hub id, read from the Hugging Face cache
 * or downloaded, or a local snapshot folder) and the subsets (configs) and splits the reference
 * concatenates: train = primeintellect, taco, lcbv5 (train split), shuffled with `seed`;
 * test = codeforces, lcbv5 (test split), in order.
 */
export const CodeRLHfSchema = z.strictObject({
  path: z.string().min(1).default(DEEPCODER_DATASET),
  revision: HfSourceSchema.shape.revision,
  train_subsets: z.array(z.string().min(1)).min(1).default(['primeintellect', 'taco', 'lcbv5']),
  train_split: z.string().min(1).default('train'),
  /** Empty: no test set. */
  test_subsets: z.array(z.string().min(1)).default(['codeforces', 'lcbv5']),
  test_split: z.string().min(1).default('test'),
});
export type CodeRLHf = z.output<typeof CodeRLHfSchema>;

/** Where an hf error points in code_rl's args (the shared loader names `dataset.hf.*`). */
function inCodeRLArgs(e: unknown, subsetsKey: string): unknown {
  if (!(e instanceof DataFormatError)) return e;
  const message = e.message.replaceAll('(dataset.hf.name)', `(dataset.args.hf.${subsetsKey})`).replaceAll('dataset.hf.', 'dataset.args.hf.');
  return message === e.message ? e : new (e.constructor as typeof DataFormatError)(message);
}

/** The rows of `subsets` (each a config of the dataset) in `split`, concatenated in order, each with where it came from. */
async function subsetRows(hf: CodeRLHf, subsets: string[], split: string, subsetsKey: string, opts: HfLoadOptions): Promise<Array<[string, unknown]>> {
  const rows: Array<[string, unknown]> = [];
  // Only the columns the reference reads (the dataset's `solutions` are most of its bytes).
  const identity = { name: 'deepcoder', columns: [...QUESTION_COLUMNS, ...TESTS_COLUMNS, 'starter_code', 'metadata'], someColumns: true, map: (row: Record<string, unknown>) => row };
  for (const name of subsets) {
    const src = HfSourceSchema.parse({ path: hf.path, name, split, revision: hf.revision });
    try {
      const files = await splitFiles(src, split, opts);
      for await (const r of mappedRows(files, identity)) rows.push([r.at, r.value]);
    } catch (e) {
      throw inCodeRLArgs(e, subsetsKey);
    }
  }
  return rows;
}

/**
 * The reference's load_deepcoder_tasks for both splits: each split's subsets concatenated, the train
 * rows shuffled with `seed` (HF `Dataset.shuffle(seed)` order) before rows without tests or a question
 * are dropped, the test rows in order.
 */
export async function loadDeepCoderHf(hf: CodeRLHf, opts: HfLoadOptions & { seed: number; skipBadRows: boolean }): Promise<{ train: LoadedCodeTasks; test: LoadedCodeTasks | null }> {
  const trainRows = shuffled(await subsetRows(hf, hf.train_subsets, hf.train_split, 'train_subsets', opts), opts.seed);
  const skipped: string[] = [];
  const train = tasksFromRows(trainRows, opts.skipBadRows, skipped);
  const where = `${hf.path} (${hf.train_subsets.join(', ')}; split ${hf.train_split})`;
  if (!train.length) throw new DataFormatError(`${where}: no problem with a question and tests among ${trainRows.length} rows`);
  if (!hf.test_subsets.length) return { train: { tasks: train, skipped }, test: null };
  const testRows = await subsetRows(hf, hf.test_subsets, hf.test_split, 'test_subsets', opts);
  const testSkipped: string[] = [];
  const test = tasksFromRows(testRows, opts.skipBadRows, testSkipped);
  return { train: { tasks: train, skipped }, test: { tasks: test, skipped: testSkipped } };
}
