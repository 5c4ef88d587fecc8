// Grading generated code by running a problem's tests in a sandbox (reference 0.6.1
// recipes/code_rl/code_grading.py): the last fenced code block of the answer, the tests in
// LiveCodeBench's `input_output` form, and LiveCodeBench's harness run by any CodeRunner — the
// local sandbox or a SandboxFusion server.
import { pyJsonDumps } from '../../../pyjson.js';
import type { CodeRunner } from '../../../sandbox/types.js';
import { testCode, testUtilSource } from './lcb.js';

/** One test in LiveCodeBench's layout: stdin/stdout text, or JSON lines of call arguments and the JSON result (`functional`). */
export interface CodeTest {
  input: string;
  output: string;
  testtype: 'stdin_stdout' | 'functional';
  metadata: { func_name?: string | null } & Record<string, unknown>;
}

/** What the sandbox said: whether every test passed, and its response (or `{error}`). */
export type Verdict = [boolean, Record<string, unknown>];

/** The last fenced code block (```lang\n…```), stripped; null when there is none. */
export function extractCodeFromModel(modelResponse: string): string | null {
  const blocks = [...modelResponse.matchAll(/```(?:[\p{L}\p{N}_]+)?\n([\s\S]*?)```/gu)].map((m) => m[1]);
  return blocks.length ? blocks[blocks.length - 1].trim() : null;
}

/** The reference's postprocess_lcb_sample: `{"input_output": json.dumps({inputs, outputs[, fn_name]})}`. */
export function postprocessLcbSample(sample: CodeTest[]): { input_output: string } {
  const dict: Record<string, unknown> = { inputs: sample.map((t) => t.input), outputs: sample.map((t) => t.output) };
  if (sample[0]?.testtype === 'functional') {
    const fnName = sample[0].metadata?.func_name;
    if (fnName == null) throw new Error(`Function name missing in metadata: ${JSON.stringify(sample[0].metadata)}`);
    dict.fn_name = fnName;
  }
  return { input_output: pyJsonDumps(dict) };
}

/**
 * The reference's sandbox_check_correctness: the harness gets `timeout` seconds per test and the
 * whole run `(timeout + 1) · tests + 5`. A sandbox that cannot be asked is a failed verdict.
 */
export async function sandboxCheckCorrectness(runner: CodeRunner, sample: CodeTest[], generation: string, timeout = 6): Promise<Verdict> {
  if (sample.length < 1) throw new Error('Sample must contain at least one test case');
  try {
    const testCases = postprocessLcbSample(sample);
    const totalTimeout = (timeout + 1) * sample.length + 5;
    const files = { 'test_cases.txt': pyJsonDumps(testCases), 'code.py': generation, 'testing_util.py': testUtilSource() };
    const [passed, details] = await runner.run(testCode(timeout), files, totalTimeout);
    return [passed, details as Record<string, unknown>];
  } catch (e) {
    return [false, { error: e instanceof Error ? e.message : String(e) }];
  }
}

/** The reference's taco_to_lcb_format: TACO's `{inputs, outputs[, fn_name]}` as LiveCodeBench tests. */
export function tacoToLcbFormat(tests: { inputs?: unknown[]; outputs?: unknown[]; fn_name?: string }): CodeTest[] {
  const inputs = tests.inputs ?? [];
  const outputs = tests.outputs ?? [];
  const n = Math.max(inputs.length, outputs.length);
  return Array.from({ length: n }, (_, i) => {
    const input = i < inputs.length ? inputs[i] : (inputs[0] ?? '');
    let output = i < outputs.length ? outputs[i] : (outputs[0] ?? '');
    if (Array.isArray(output)) output = output[0] ?? '';
    return tests.fn_name !== undefined
      ? { input: String(input), output: String(output), testtype: 'functional' as const, metadata: { func_name: tests.fn_name } }
      : { input: String(input), output: String(output), testtype: 'stdin_stdout' as const, metadata: {} };
  });
}
