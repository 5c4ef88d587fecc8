// LiveCodeBench's prompt and test harness as the reference's code_rl ships them
// (tinker-cookbook 0.6.1 recipes/code_rl/lcb_utils.py): the system prompt wrapped around each
// problem, and the program the sandbox runs — TEST_CODE, which loads testing_util.py (TEST_UTIL,
// shipped beside this file as Python) and the graded code from files sent with the request.
import { readFileSync } from 'node:fs';

export const LCB_SYSTEM_MESSAGE_GENERIC =
  'You are an expert Python programmer. You will be given a question (problem specification) and will generate a correct Python program that matches the specification and passes all tests.';
export const LCB_FORMATTING_MESSAGE_WITH_STARTER_CODE =
  'You will use the following starter code to write the solution to the problem and enclose your code within delimiters.';
export const LCB_FORMATTING_WITHOUT_STARTER_CODE =
  'Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program runs, it reads the inputs, runs the algorithm and writes output to STDOUT.';

/** The reference's fetch_live_code_bench_system_prompt. */
export function fetchLiveCodeBenchSystemPrompt(prompt: string, starterCode: string | null = null): string {
  let out = `${LCB_SYSTEM_MESSAGE_GENERIC}\n\n${prompt}`;
  if (starterCode) {
    out += `### Format: ${LCB_FORMATTING_MESSAGE_WITH_STARTER_CODE}\n`;
    out += `\`\`\`python\n${starterCode}\n\`\`\`\n\n`;
  } else {
    out += `### Format: ${LCB_FORMATTING_WITHOUT_STARTER_CODE}\n`;
    out += '```python\n# YOUR CODE HERE\n```\n\n';
  }
  out += '### Answer: (use the provided format with backticks)\n\n';
  return out;
}

/** The reference's `TEST_CODE % {"timeout": timeout}`: exits 0 when every test passed. */
export function testCode(timeoutSeconds: number): string {
  return `
import json
import sys

from testing_util import run_test

with open('test_cases.txt', 'r') as fin:
    sample = json.load(fin)
with open('code.py', 'r') as fin:
    code = fin.read()

result, metadata = run_test(sample, code, debug=False, timeout=${timeoutSeconds})
if any(x != True for x in result):
    print(metadata)
    sys.exit(-1)
else:
    sys.exit(0)
`;
}

let testUtil: string | null = null;
/** TEST_UTIL: testing_util.py beside this module. */
export function testUtilSource(): string {
  testUtil ??= readFileSync(new URL('./testing_util.py', import.meta.url), 'utf8');
  return testUtil;
}
