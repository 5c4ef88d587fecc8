// code_rl beside the reference's (tinker-cookbook 0.6.1, run at test time): the LiveCodeBench
// question and normalised tests of every shipped problem, the test cases sent to the sandbox, code
// extraction, and the verdicts of sandbox_check_correctness — the reference's grader and ours on the
// same solutions, both through the local sandbox's run_code server (its SandboxFusion client, our
// runner), agree on which pass.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testUtilSource } from '../../src/cookbook/rl/envs/code/lcb.js';
import { extractCodeFromModel, postprocessLcbSample, sandboxCheckCorrectness } from '../../src/cookbook/rl/envs/code/grading.js';
import { codeTaskFromRow, normalizeTests } from '../../src/cookbook/rl/envs/code/tasks.js';
import { LocalSandbox } from '../../src/cookbook/sandbox/local.js';
import { startSandboxServer, type SandboxServer } from '../../src/cookbook/sandbox/server.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const ROWS = readFileSync(join(import.meta.dirname, '..', '..', 'data', 'code_rl_problems.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as Record<string, unknown>);
const RESPONSES = ['no code', '```python\nprint(1)\n```', 'a\n```py\nx = 1\n```\nthen\n```\n  y = 2\n```\n', '```python print(1)```', '```\nunterminated'];
// Right, wrong, crashing and non-compiling solutions of stdin, functional and TACO-layout problems.
const CHECKS = [
  { row: 0, code: 'a, b = map(int, input().split())\nprint(a + b)' },
  { row: 0, code: 'a, b = map(int, input().split())\nprint(a * b)' },
  { row: 2, code: 'class Solution:\n    def maxDifference(self, nums):\n        return max((nums[j] - nums[i] for i in range(len(nums)) for j in range(i + 1, len(nums))), default=0)' },
  { row: 2, code: 'class Solution:\n    def maxDifference(self, nums):\n        return 4' },
  { row: 3, code: 'class Solution:\n    def rotatesToReverse(self, s, k):\n        raise ValueError("no")' },
  { row: 4, code: "n = int(input())\nfor i in range(1, n + 1):\n    print('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else i)" },
  { row: 5, code: 'def (:' },
  { row: 5, code: 'input()\nprint(*sorted(map(int, input().split())))' },
].map((c) => ({ ...c, timeout: 2 }));

const sandboxAvailable = await new LocalSandbox().available().then(() => true, () => false);
let server: SandboxServer | undefined;
let reference: { questions: Array<string | null>; tests: unknown[]; test_cases: Array<{ input_output: string }>; extracted: Array<string | null>; verdicts: boolean[]; test_util: string };

describe.runIf(sandboxAvailable)('code_rl against the reference', { timeout: 180_000 }, () => {
  beforeAll(async () => {
    const { python } = await ensureReferenceEnv({ log: () => {} });
    server = await startSandboxServer();
    // Async: the server answering the reference's client runs in this process.
    const child = await runPythonScript(python, [join(import.meta.dirname, 'code_rl_cases.py'), server!.url], {
      env: { ...process.env, HF_HUB_OFFLINE: '1' },
      input: JSON.stringify({ rows: ROWS, responses: RESPONSES, checks: CHECKS, test_util: testUtilSource() }),
    });
    expect(child.status, child.stderr).toBe(0);
    reference = JSON.parse(child.stdout);
  }, 180_000);
  afterAll(async () => {
    await server?.close();
  });

  it('builds the same questions and tests, and sends the same test cases', () => {
    const tasks = ROWS.map((r) => codeTaskFromRow(r)!);
    expect(tasks.map((t) => t.problem)).toEqual(reference.questions);
    expect(ROWS.map((r) => normalizeTests(r.tests, typeof r.metadata === 'string' ? JSON.parse(r.metadata) : {}))).toEqual(reference.tests);
    expect(tasks.map((t) => postprocessLcbSample(t.tests))).toEqual(reference.test_cases);
  });

  it('extracts the same code', () => {
    expect(RESPONSES.map(extractCodeFromModel)).toEqual(reference.extracted);
  });

  it("ships the reference's LiveCodeBench harness, numpy made optional", () => {
    const asReference = testUtilSource()
      .replace(/^(#[^\n]*\n)+/, '')
      .replace(/try:\n    import numpy as np\nexcept ImportError:\n[\s\S]*?\n\n(?=# for capturing the stdout)/, 'import numpy as np\n\n');
    expect(asReference).toBe(reference.test_util);
  });

  it('reaches the same verdicts', async () => {
    const sandbox = new LocalSandbox();
    const ours = await Promise.all(CHECKS.map(async (c) => (await sandboxCheckCorrectness(sandbox, codeTaskFromRow(ROWS[c.row])!.tests, c.code, c.timeout))[0]));
    expect(ours).toEqual(reference.verdicts);
    expect(ours).toEqual([true, false, true, false, false, true, false, true]);
  });
});
