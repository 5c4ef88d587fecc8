// MBPP and LiveCodeBench graded in the local sandbox: each run happens once per (example, sample)
// key, recorded in the eval run's store, so grading again (a retried chunk) reads the verdicts back;
// a sandbox that cannot run the code is an error, not a failed program; rows without usable tests
// are refused with the row named.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadBenchmark } from '../../../src/cookbook/eval/benchmark-data.js';
import { livecodebenchSuite } from '../../../src/cookbook/eval/suites/livecodebench.js';
import { mbppSuite } from '../../../src/cookbook/eval/suites/mbpp.js';
import type { EvalItem } from '../../../src/cookbook/eval/suites/index.js';
import { runStoreOnce } from '../../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../../src/cookbook/run-store.js';
import { LocalSandbox, SandboxError, type CodeRunner } from '../../../src/cookbook/sandbox/index.js';
import { ConfigurationError, DataFormatError } from '../../../src/cookbook/errors.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** The local sandbox, counting the programs it is asked to run. */
function countingSandbox(opts: ConstructorParameters<typeof LocalSandbox>[0] = {}): CodeRunner & { runs: number } {
  const sandbox = new LocalSandbox(opts);
  const counted = {
    runs: 0,
    run: (...args: Parameters<CodeRunner['run']>) => {
      counted.runs++;
      return sandbox.run(...args);
    },
    close: () => sandbox.close(),
  };
  return counted;
}

function freshStore(): RunStore {
  const d = mkdtempSync(join(tmpdir(), 'h56c-code-bench-'));
  dirs.push(d);
  return new RunStore(d);
}

const items = async (suite: string) => (await loadBenchmark({ suite, data_path: null, data_name: null, data_split: null, limit: null, system_prompt: null })).items;
const fence = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

describe('MBPP in the sandbox', () => {
  it('runs each sample’s program once: grading again through the same store reads the verdict back', async () => {
    const sandbox = countingSandbox();
    const suite = mbppSuite(() => sandbox);
    const [item] = await items('mbpp');
    const store = freshStore();
    const good = fence('def sum_even_squares(nums):\n    return sum(n * n for n in nums if n % 2 == 0)');
    const bad = fence('def sum_even_squares(nums):\n    return 0');
    const grade = (response: string, sample: number) => suite.grade(response, item, { message: null, once: runStoreOnce(store, ['eval', 0, sample]) });

    expect((await grade(good, 0)).correct).toBe(true);
    expect((await grade(bad, 1)).correct).toBe(false);
    expect(sandbox.runs).toBe(2);
    // The retried chunk: the same samples, their verdicts read from the records.
    expect((await grade(good, 0)).correct).toBe(true);
    expect((await grade(bad, 1)).correct).toBe(false);
    expect(sandbox.runs).toBe(2);
    expect(readdirSync(join(store.logPath, '.cookbook', 'store', 'side_effects')).sort()).toEqual(['eval_0_0', 'eval_0_1']);
    // Other code under a recorded key (a sampler that is not deterministic) runs anew.
    expect((await grade(good, 1)).correct).toBe(true);
    expect(sandbox.runs).toBe(3);
  }, 60_000);

  it('a sandbox that refuses the run is an error, and nothing is recorded', async () => {
    const suite = mbppSuite(() => new LocalSandbox({ maxTimeoutSeconds: 5 }));
    const [item] = await items('mbpp');
    const store = freshStore();
    await expect(suite.grade(fence('x = 1'), item, { message: null, once: runStoreOnce(store, ['eval', 0, 0]) })).rejects.toThrow(SandboxError);
    expect(existsSync(join(store.logPath, '.cookbook', 'store', 'side_effects'))).toBe(false);
  });

  it('refuses rows it cannot grade, naming them', () => {
    const suite = mbppSuite();
    expect(() => suite.parseRow({ task_id: 1, prompt: 'p', test_list: [] }, 'rows.jsonl:3', null)).toThrow(new DataFormatError('rows.jsonl:3: "test_list" must be a non-empty list of strings'));
    expect(() => suite.parseRow({ task_id: 1, text: '', test_list: ['assert 1'] }, 'rows.jsonl:4', null)).toThrow(/rows.jsonl:4: "prompt" \(or "text"\)/);
    expect(suite.parseRow({ text: 'full-config task', test_list: ['assert 1'] }, 'r:1', null).id).toMatch(/^mbpp_[0-9a-f]{12}$/);
  });
});

describe('LiveCodeBench in the sandbox', () => {
  const vowels = fence("print(sum(c in 'aeiou' for c in input()))");

  it('runs the tests in order up to the first failure, each once per sample', async () => {
    const sandbox = countingSandbox();
    const suite = livecodebenchSuite(() => sandbox);
    const [easy, medium] = await items('livecodebench');
    const store = freshStore();
    const grade = (response: string, item: EvalItem, index: number) => suite.grade(response, item, { message: null, once: runStoreOnce(store, ['eval', index, 0]) });

    expect((await grade(vowels, easy, 0)).correct).toBe(true);
    expect(sandbox.runs).toBe(2);
    // Wrong on the first of three tests: the other two never run.
    expect((await grade(fence('print(42)'), medium, 1)).correct).toBe(false);
    expect(sandbox.runs).toBe(3);
    expect(readdirSync(join(store.logPath, '.cookbook', 'store', 'side_effects', 'eval_0_0')).sort()).toEqual(['sandbox_test_0.json', 'sandbox_test_1.json']);

    expect((await grade(vowels, easy, 0)).correct).toBe(true);
    expect((await grade(fence('print(42)'), medium, 1)).correct).toBe(false);
    expect(sandbox.runs).toBe(3);
  }, 60_000);

  it('reads public tests in either layout and refuses rows without usable ones', () => {
    const suite = livecodebenchSuite();
    const q = { question_content: 'Q', difficulty: 'easy' };
    const tests = { inputs: ['1\n'], outputs: ['1\n'] };
    expect(suite.parseRow({ ...q, input_output: JSON.stringify(tests) }, 'r:1', null).target).toEqual(tests);
    expect(suite.parseRow({ ...q, public_test_cases: [{ input: '1\n', output: '1\n', testtype: 'stdin' }] }, 'r:1', null).target).toEqual(tests);
    expect(suite.parseRow({ ...q, difficulty: null, public_test_cases: JSON.stringify([{ input: '1\n', output: '1\n' }]) }, 'r:1', null).group).toBeUndefined();
    expect(suite.parseRow({ question_content: 'Q', public_test_cases: [{ input: 'a', output: 'b' }] }, 'r:1', null).group).toBe('unknown');
    // The private tests (base64 of zlib of a pickle) are never read, as the reference's benchmark never reads them.
    expect(suite.parseRow({ ...q, input_output: JSON.stringify(tests), private_test_cases: 'not base64 at all' }, 'r:1', null).target).toEqual(tests);
    expect(() => suite.parseRow({ ...q, public_test_cases: 'not json' }, 'test6.jsonl:7', null)).toThrow(/test6.jsonl:7: no tests/);
    expect(() => suite.parseRow({ ...q, input_output: JSON.stringify({ inputs: ['1'], outputs: [] }) }, 'r:2', null)).toThrow(/r:2: "input_output" needs as many outputs as inputs/);
    expect(() => suite.parseRow({ ...q, input_output: JSON.stringify({ inputs: [1], outputs: [1] }) }, 'r:3', null)).toThrow(/r:3: the tests of "input_output" must be text/);
    expect(() => suite.parseRow({ ...q, input_output: JSON.stringify(tests) }, 'r:4', 'be brief')).toThrow(ConfigurationError);
  });
});
