// The code benchmarks beside the reference's (tinker-cookbook 0.6.1 eval/benchmarks/mbpp.py and
// _livecodebench.py, run at test time on the shipped rows): prompt text and example id, the code
// taken from each response, the verdict on correct and wrong programs (the reference's run in a host
// sandbox, ours in the local sandbox) and LiveCodeBench's aggregate.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadBenchmark } from '../../src/cookbook/eval/benchmark-data.js';
import { aggregateResults } from '../../src/cookbook/eval/benchmark-run.js';
import { extractPythonCode } from '../../src/cookbook/eval/suites/code-exec.js';
import { SUITES, type EvalItem, type ExampleResult } from '../../src/cookbook/eval/suites/index.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const REPO = join(import.meta.dirname, '..', '..');
const rowsOf = (file: string) => readFileSync(join(REPO, 'data/eval', file), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
const MBPP_ROWS = rowsOf('mbpp/sanitized/test-00000-of-00001.jsonl');
const LCB_ROWS = rowsOf('livecodebench/test6.jsonl');
const SYSTEM = 'You are a careful Python programmer.';

const fence = (code: string, lang = 'python') => `Here you go:\n\`\`\`${lang}\n${code}\n\`\`\`\n`;
const MBPP_RESPONSES: Array<[number, string]> = [
  ...MBPP_ROWS.map((r, i): [number, string] => [i, fence(r.code as string)]),
  [0, fence('def sum_even_squares(nums):\n    return sum(n * n for n in nums)')],
  [1, 'def is_loose_palindrome(s):\n    return s == s[::-1]'],
  [2, `Draft:\n\`\`\`\ndef longest_run(xs): return 0\n\`\`\`\nFinal:\n\`\`\`py\n${MBPP_ROWS[2].code}\n\`\`\``],
  // test_imports is not run: code that relies on it fails in both.
  [3, fence('def point_distance(p, q):\n    return math.hypot(p[0] - q[0], p[1] - q[1])')],
  [0, fence('import sys\ndef sum_even_squares(nums):\n    sys.exit(0)')],
  [0, 'no code at all'],
];
const LCB_RESPONSES: Array<[number, string]> = [
  [0, fence("s = input().strip()\nprint(sum(c in 'aeiou' for c in s))")],
  [0, fence("s = input()\nprint(sum(c in 'aeiou' for c in s) + 1)")],
  [0, fence("import sys\ns = sys.stdin.read().strip()\nprint(sum(c in 'aeiou' for c in s), '  ')")],
  [1, fence('n = int(input())\na = list(map(int, input().split()))\nprint(*[a[i + 1] - a[i] for i in range(n - 1)])')],
  [1, fence('n = int(input())\na = list(map(int, input().split()))\nprint(*[a[i + 1] - a[i] for i in range(n - 1)])\nif n == 3: raise SystemExit(1)')],
  [1, fence('print(1 / 0)')],
  [2, fence('class Solution:\n    def countDistinctLengths(self, words):\n        return len({len(w) for w in words})')],
  [2, fence('import ast\nwords = ast.literal_eval(input())\nprint(len({len(w) for w in words}))')],
  [3, fence("print(' '.join(reversed(input().split())))")],
  [3, fence("print(' '.join(reversed(input().split())), end='')")],
  [3, fence("import time\ntime.sleep(0.2)\nprint(input()[::-1])")],
];
const EXTRACT = [
  'text only\n',
  '```python\nx = 1\n```',
  '```python   \n\n  x = 2\n\n```',
  '```python\nx = 1```',
  '```\na\n```\nthen\n```js\nb\n```',
  '```c++\na\n```',
  '```résumé\nc\n```',
  '```python\u2003\nd\n```',
  '```\n```',
  '```python\n\n```\n```\ne\n```',
  '  \u3000spaced\u0085',
];

let reference: {
  extracted: string[];
  mbpp: { examples: Array<{ id: string; messages: unknown[] }>; verdicts: Array<{ code: string; reward: number }> };
  livecodebench: { examples: Array<{ id: string; prompt: string; difficulty: string }>; verdicts: Array<{ code: string; reward: number }>; aggregate: Record<string, number> };
};
let mbppItems: EvalItem[];
let lcbItems: EvalItem[];

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({
    extract: EXTRACT,
    mbpp: { rows: MBPP_ROWS, system_prompt: SYSTEM, responses: MBPP_RESPONSES },
    livecodebench: { rows: LCB_ROWS, responses: LCB_RESPONSES },
  });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'eval_code_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
  const load = async (suite: string, system_prompt: string | null) => (await loadBenchmark({ suite, data_path: null, data_name: null, data_split: null, limit: null, system_prompt })).items;
  mbppItems = await load('mbpp', SYSTEM);
  lcbItems = await load('livecodebench', null);
}, 180_000);

describe('code benchmarks beside the reference', () => {
  it('extract_python_code: the same code from fenced, unfenced and oddly fenced responses', () => {
    expect(EXTRACT.map(extractPythonCode)).toEqual(reference.extracted);
  });

  it('MBPP: the same example ids and prompt messages (system prompt included)', () => {
    expect(mbppItems.map((i) => ({ id: i.id, messages: i.messages }))).toEqual(reference.mbpp.examples);
  });

  it('MBPP: the same code and verdict on correct and wrong programs', async () => {
    const ours = await Promise.all(MBPP_RESPONSES.map(async ([row, response]) => await SUITES.mbpp.grade(response, mbppItems[row])));
    expect(ours.map((g) => ({ code: g.extracted, reward: g.correct ? 1 : 0 }))).toEqual(reference.mbpp.verdicts);
    // Every shipped solution, the one in the last of two fences, and the program that exits 0 before its tests.
    expect(ours.filter((g) => g.correct).length).toBe(MBPP_ROWS.length + 2);
  }, 120_000);

  it('LiveCodeBench: the same example ids, prompts and difficulties', () => {
    expect(lcbItems.map((i) => ({ id: i.id, prompt: i.messages[0].content, difficulty: i.group }))).toEqual(reference.livecodebench.examples);
    expect(lcbItems.every((i) => i.messages.length === 1 && i.messages[0].role === 'user')).toBe(true);
  });

  it('LiveCodeBench: the same code, verdict on correct and wrong programs, and per-difficulty aggregate', async () => {
    const grades = await Promise.all(LCB_RESPONSES.map(async ([row, response]) => await SUITES.livecodebench.grade(response, lcbItems[row])));
    expect(grades.map((g) => ({ code: g.extracted, reward: g.correct ? 1 : 0 }))).toEqual(reference.livecodebench.verdicts);
    expect(grades.map((g) => g.correct)).toEqual([true, false, true, true, false, false, false, true, true, true, false]);
    const results: ExampleResult[] = LCB_RESPONSES.map(([row, response], i) => ({
      index: i,
      id: lcbItems[row].id,
      group: lcbItems[row].group,
      prompt: '',
      response,
      expected: '',
      extracted: grades[i].extracted,
      correct: grades[i].correct,
    }));
    const metrics = aggregateResults(SUITES.livecodebench, results);
    const ref = reference.livecodebench.aggregate;
    expect(Object.fromEntries(Object.entries(ref).map(([k, v]) => [k, metrics[k.replace(/^livecodebench\//, '')]]))).toEqual(ref);
    expect(metrics.score).toBe(ref['livecodebench/pass_at_1']);
  }, 120_000);
});
