// `cookbook eval` end to end, as a user runs it (no TTY), against the real stack: progress lines,
// the results table, results.json and results.md in the run folder, `--list`, `runs` and `status`
// of an eval, and bad input refused before any run exists, naming the file and line (with
// --no-skip, a row this port cannot check too).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Service } from '../../src/cli/services.js';
import type { EvalResultsFile } from '../../src/cookbook/eval/results.js';
import { cookbookOn as cookbook } from '../support/cli.js';
import { startTestStack, workerProcess, type TestStack } from '../support/stack.js';

const root = join(import.meta.dirname, '..', '..');

describe('cookbook eval', () => {
  let stack: TestStack;
  let worker: Service;
  beforeAll(async () => {
    stack = await startTestStack();
    worker = await workerProcess(stack);
  });
  afterAll(async () => {
    await worker?.stop();
    await stack?.stop();
  });

  it('--list names every suite and its public dataset', async () => {
    const r = await cookbook(stack, ['eval', '--list']);
    expect(r.code).toBe(0);
    for (const s of ['gsm8k', 'math500', 'ifeval', 'mmlu']) expect(r.out).toMatch(new RegExp(`^${s}\\s`, 'm'));
    expect(r.out).toContain('openai/gsm8k (config main), split test');
  });

  it('evaluates a model: progress lines, the results table, results.json and results.md', async () => {
    const r = await cookbook(stack, ['eval', 'tiny-qwen3', 'mmlu', '--limit', '4', '--set', 'max_tokens=8', '--set', 'chunk_size=2', '--id', 'eval-cli']);
    expect(r.err).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.out).toContain('started eval-cli: mmlu on tiny-qwen3, 4 examples');
    expect(r.out).toMatch(/^mmlu: 4\/4 examples \(chunk 2\/2\) · \d correct · accuracy so far \d\.\d{4} · completed$/m);
    expect(r.out).toMatch(/^\| score +\| +\d\.\d{4} \|$/m);
    expect(r.out).toMatch(/^\| num_examples +\| +4 \|$/m);
    const logDir = join(stack.dir, 'runs', 'eval-cli');
    expect(r.out).toContain(`results  ${join(logDir, 'results.json')}`);
    const file = JSON.parse(readFileSync(join(logDir, 'results.json'), 'utf8')) as EvalResultsFile;
    expect(file.examples).toHaveLength(4);
    expect(file.metrics.num_examples).toBe(4);
    expect(readFileSync(join(logDir, 'results.md'), 'utf8')).toContain('| num_examples');

    const runs = await cookbook(stack, ['runs']);
    // One status column: what the run says, Temporal's view only where the two differ.
    expect(runs.out).toMatch(/eval-cli\s+eval\s+tiny-qwen3\s+\d+\s+completed\n/);
    const status = await cookbook(stack, ['status', 'eval-cli']);
    expect(status.out).toContain('eval-cli: COMPLETED');
    expect(status.out).toContain('completed after 2 steps');
    expect(status.out).toMatch(/num_examples\s+4/);
  });

  it('a bad row of a user data set is refused before any run exists, naming the file and line', async () => {
    const data = join(stack.dir, 'my-gsm8k', 'main');
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, 'test-00000-of-00001.jsonl'), `${JSON.stringify({ question: 'Q1', answer: '#### 1' })}\n${JSON.stringify({ question: 'Q2', answer: 'no final line' })}\n`);
    const r = await cookbook(stack, ['eval', 'tiny-qwen3', 'gsm8k', '--data', join(stack.dir, 'my-gsm8k'), '--id', 'eval-bad']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('main/test-00000-of-00001.jsonl:2: "answer" has no final answer line');
    expect(existsSync(join(stack.dir, 'runs', 'eval-bad'))).toBe(false);
    // A row the port cannot check is skipped by default (test/workflows/eval.test.ts); --no-skip refuses it, naming file and line.
    const strict = await cookbook(stack, ['eval', 'tiny-qwen3', 'ifbench', '--data', join(root, 'test', 'fixtures', 'ifbench_skip'), '--no-skip', '--id', 'eval-no-skip']);
    expect(strict.code).toBe(2);
    expect(strict.err).toContain('ifbench_skip/train.jsonl:3: instruction "words:start_verb" is an IFBench instruction this port cannot check');
    expect(existsSync(join(stack.dir, 'runs', 'eval-no-skip'))).toBe(false);
  });

  it('bad arguments are config errors that name the option', async () => {
    expect((await cookbook(stack, ['eval', 'tiny-qwen3', 'nosuch'])).err).toMatch(/suite.*gsm8k/);
    expect((await cookbook(stack, ['eval', 'tiny-qwen3', 'gsm8k', '--limit', 'ten'])).err).toContain('--limit: "ten" is not a positive integer');
    expect((await cookbook(stack, ['eval', 'tiny-qwen3', 'gsm8k', '--data', 'missing-dir'])).err).toContain('--data: missing-dir does not exist');
    expect((await cookbook(stack, ['eval', 'tiny-qwen3', 'gsm8k', '--set', 'temperature=-1'])).err).toMatch(/temperature/);
  });

  it('train checks a benchmark evaluator entry before starting, naming its config path', async () => {
    const config = join(root, 'test', 'fixtures', 'sl_benchmark_eval.json');
    const missing = await cookbook(stack, ['train', 'sl', config, 'evaluators=[{"kind": "benchmark", "suite": "ifeval", "data_path": "no-such-folder"}]', '--dry-run']);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/evaluators\.0\.data_path: .*no-such-folder does not exist/);
    const unknown = await cookbook(stack, ['train', 'sl', config, 'evaluators=[{"kind": "benchmark", "suite": "gsm9k"}]', '--dry-run']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('evaluators.0.suite');
  });
});
