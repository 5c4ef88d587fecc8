// Grading generated code by running a problem's tests in a sandbox (reference 0.6.1
// recipes/code_rl/code_grading.py): the last fenced code block of the answer, the tests in
// LiveCodeBench's `input_output` form, and LiveCodeBench's harness run by any CodeRunner — the
// local sandbox or a SandboxFusion server.
import { ServiceUnavailableError } from '../../../errors.js';
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
 * whole run `(timeout + 1) · tests + 5`. A request the sandbox refused is a failed verdict; a
 * sandbox out of reach past its client's retries (ServiceUnavailableError) is no verdict at all:
 * it is thrown, so no failure is recorded for code that never ran.
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
    if (e instanceof ServiceUnavailableError) throw e;
    return [false, { error: e instanceof Error ? e.message : String(e) }];
  }
}
