// LiveCodeBench (livecodebench/code_generation_lite, the reference's test6.jsonl), as the
// reference's eval/benchmarks/_livecodebench.py: the problem, its starter code if any, and the
// instruction to read stdin and write stdout; the response's code runs once per public test with
// the test's input as stdin (30 s each) and passes when every run exits 0 and prints the expected
// output (both stripped). Every test runs as stdin/stdout, LeetCode's functional ones included, and
// the private tests are not read: the reference does both. The reference sends no system prompt.
import { ConfigurationError, DataFormatError } from '../../errors.js';
import { exampleId } from './gsm8k.js';
import { extractPythonCode, runVerdict, sha256, sharedRunner, type RunnerSource, type RunVerdict } from './code-exec.js';
import { pyGet } from './fields.js';
import { pyStripWs } from '../../renderers/py-whitespace.js';
import { NO_EFFECTS, type ExampleResult, type Suite } from './types.js';

const TIMEOUT_SECONDS = 30;

interface LcbTarget {
  inputs: string[];
  outputs: string[];
}

export function lcbPrompt(question: string, starterCode: string): string {
  const parts = [question];
  if (starterCode) parts.push(`\nStarter code:\n\`\`\`python\n${starterCode}\n\`\`\``);
  parts.push('\nWrite a complete Python solution. Read input from stdin and write output to stdout. Provide your solution in a ```python code block.');
  return parts.join('\n');
}

// The reference's sandbox runs `python3 /tmp/solution.py < /tmp/stdin.txt`; a runner takes a
// program and its files, so this program starts the solution on the stdin file and exits with its status.
const WITH_STDIN = `import subprocess, sys
with open('stdin.txt', 'rb') as stdin:
    sys.exit(subprocess.run([sys.executable, 'solution.py'], stdin=stdin).returncode)
`;

/** Python's truth of a JSON value. */
const pyTruthy = (v: unknown) => (Array.isArray(v) ? v.length > 0 : v !== null && typeof v === 'object' ? Object.keys(v).length > 0 : Boolean(v));

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/**
 * The tests as the reference reads them: `input_output` (JSON of {inputs, outputs}) when set, else
 * `public_test_cases` (a list of {input, output}, or its JSON). Rows the reference skips, or whose
 * every sample it would fail without running (unreadable or mismatched tests), are errors here.
 */
function testsOf(row: Record<string, unknown>, at: string): LcbTarget {
  let raw = pyGet(row, 'input_output', '');
  let field = 'input_output';
  if (!pyTruthy(raw)) {
    field = 'public_test_cases';
    let pub = pyGet(row, 'public_test_cases', []);
    if (typeof pub === 'string' && pub) pub = parseJson(pub) ?? [];
    if (!Array.isArray(pub) || pub.length === 0) throw new DataFormatError(`${at}: no tests: "input_output" is empty and "public_test_cases" is not a non-empty list (or its JSON)`);
    pub.forEach((t, i) => {
      if (t === null || typeof t !== 'object' || !('input' in t) || !('output' in t)) throw new DataFormatError(`${at}: public_test_cases[${i}] has no "input" and "output"`);
    });
    raw = JSON.stringify({ inputs: pub.map((t) => t.input), outputs: pub.map((t) => t.output) });
  }
  const tests = typeof raw === 'string' ? parseJson(raw) : undefined;
  if (tests === null || typeof tests !== 'object' || Array.isArray(tests)) throw new DataFormatError(`${at}: "${field}" is not a JSON object of tests`);
  const t = tests as Record<string, unknown>;
  const inputs = pyGet(t, 'inputs', pyGet(t, 'input', []));
  const outputs = pyGet(t, 'outputs', pyGet(t, 'output', []));
  if (!Array.isArray(inputs) || !Array.isArray(outputs) || inputs.length === 0 || inputs.length !== outputs.length) {
    throw new DataFormatError(`${at}: "${field}" needs as many outputs as inputs, at least one`);
  }
  // The reference runs str() of a non-text test; JSON numbers lose Python's int/float distinction, so only text is taken.
  if (![...inputs, ...outputs].every((x) => typeof x === 'string')) throw new DataFormatError(`${at}: the tests of "${field}" must be text (stdin and expected stdout)`);
  return { inputs: inputs as string[], outputs: outputs as string[] };
}

export function livecodebenchSuite(runner: RunnerSource = sharedRunner): Suite {
  return {
    name: 'livecodebench',
    description: 'competitive programming (LeetCode, AtCoder, Codeforces); the answer program must pass every public stdin/stdout test in the sandbox',
    // The reference reads test6.jsonl alone (its fallback: `datasets` refuses the dataset's loading
    // script); as a split name, `test6` selects that file, where `test` would read every test*.jsonl.
    dataset: { hubId: 'livecodebench/code_generation_lite', name: null, split: 'test6' },
    sample: 'livecodebench',
    parseRow(row, at, systemPrompt) {
      if (systemPrompt) throw new ConfigurationError('system_prompt: livecodebench sends the problem alone (the reference’s LiveCodeBenchEnv takes no system prompt); leave it unset');
      const question = pyGet(row, 'question_content', pyGet(row, 'question', ''));
      if (typeof question !== 'string' || question === '') throw new DataFormatError(`${at}: "question_content" (or "question") must be a non-empty string`);
      const starter = pyGet(row, 'starter_code', '');
      if (starter !== null && typeof starter !== 'string') throw new DataFormatError(`${at}: "starter_code" must be a string`);
      const difficulty = pyGet(row, 'difficulty', 'unknown');
      return {
        id: exampleId('livecodebench', question),
        messages: [{ role: 'user', content: lcbPrompt(question, starter ?? '') }],
        target: testsOf(row, at),
        // The reference breaks the score down by difficulty when it is text (a null one is left out).
        ...(typeof difficulty === 'string' ? { group: difficulty } : {}),
      };
    },
    async grade(response, item, ctx = NO_EFFECTS) {
      const code = extractPythonCode(response);
      const { inputs, outputs } = item.target as LcbTarget;
      // In order, stopping at the first failure, as the reference does.
      for (const [i, stdin] of inputs.entries()) {
        const expected = pyStripWs(outputs[i]);
        const request = `livecodebench test ${i} sha256:${sha256(code, stdin, expected)} timeout:${TIMEOUT_SECONDS}`;
        const verdict = await ctx.once<RunVerdict>(['sandbox', `test_${i}`], request, () =>
          runVerdict(runner(), WITH_STDIN, { 'solution.py': code, 'stdin.txt': stdin }, TIMEOUT_SECONDS, (stdout) => pyStripWs(stdout) === expected),
        );
        if (!verdict.passed) return { correct: false, extracted: code };
      }
      return { correct: true, extracted: code };
    },
    expected: (item) => `passes ${(item.target as LcbTarget).inputs.length} stdin/stdout test(s)`,
    aggregate(results: readonly ExampleResult[]) {
      const byDifficulty = new Map<string, { n: number; correct: number }>();
      for (const r of results) {
        if (r.group === undefined) continue;
        const d = byDifficulty.get(r.group) ?? { n: 0, correct: 0 };
        d.n++;
        if (r.correct) d.correct++;
        byDifficulty.set(r.group, d);
      }
      const n = results.length;
      return {
        pass_at_1: n > 0 ? results.filter((r) => r.correct).length / n : 0,
        ...Object.fromEntries([...byDifficulty.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([d, v]) => [`${d}/pass_at_1`, v.correct / v.n])),
      };
    },
  };
}

export const livecodebench = livecodebenchSuite();
