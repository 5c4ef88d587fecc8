// `cookbook tts` refuses bad input before any run exists, naming the option or the file and line:
// once as a user runs it (a CLI process, exit status 2), the rest through the command's resolver.
// The CLI's run and report are in tts-cli.full.test.ts.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/cookbook/config/overrides.js';
import { checkTtsData, resolveTts } from '../../src/cli/tts.js';
import { cookbookProcess } from '../support/cli.js';

describe('cookbook tts', () => {
  // No stack: the data is checked before the command connects to anything.
  const dir = mkdtempSync(join(tmpdir(), 'cookbook-tts-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a bad row is refused by the CLI before any run exists, naming the file and line', async () => {
    const data = join(dir, 'my-problems.jsonl');
    writeFileSync(data, `${JSON.stringify({ question: 'Q1', answer: '1' })}\n${JSON.stringify({ question: 'Q2' })}\n`);
    const bad = await cookbookProcess(['tts', 'tiny-qwen3', '--data', data, '--id', 'tts-bad'], { cwd: dir }).done;
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('my-problems.jsonl:2: "answer" must be a string');
    expect(existsSync(join(dir, 'runs', 'tts-bad'))).toBe(false);
  });

  it('bad arguments and rows are config errors that name the option, or the file and line', async () => {
    const runsDir = join(dir, 'runs');
    const refused = (args: Parameters<typeof resolveTts>[1]) => () => resolveTts('tiny-qwen3', args, { runsDir });
    expect(refused({ limit: 'ten' })).toThrow(new ConfigError('--limit: "ten" is not a positive integer'));
    expect(refused({ limit: '0' })).toThrow(/--limit: "0" is not a positive integer/);
    expect(refused({ data: 'missing.jsonl' })).toThrow(/--data: missing.jsonl does not exist/);
    expect(refused({ set: ['dataset=aime'] })).toThrow(/dataset/);
    expect(refused({ set: ['temperature=-1'] })).toThrow(/temperature/);
    // MATH rows: a row without "solution" names its line; rows without a boxed answer are skipped, as the reference does.
    const math = join(dir, 'math.jsonl');
    writeFileSync(math, `${JSON.stringify({ problem: 'P', solution: 'no box' })}\n${JSON.stringify({ problem: 'P2' })}\n`);
    await expect(checkTtsData(resolveTts('tiny-qwen3', { data: math, set: ['dataset=math'] }, { runsDir }))).rejects.toThrow(/math.jsonl:2: "solution" must be a string/);
    writeFileSync(math, `${JSON.stringify({ problem: 'P', solution: 'no box' })}\n`);
    await expect(checkTtsData(resolveTts('tiny-qwen3', { data: math, set: ['dataset=math'] }, { runsDir }))).rejects.toThrow(/no row has an answer the math format can extract/);
    writeFileSync(math, `${JSON.stringify({ problem: 'P', solution: 'no box' })}\n${JSON.stringify({ problem: 'P2', solution: '$\\boxed{7}$' })}\n`);
    expect(await checkTtsData(resolveTts('tiny-qwen3', { data: math, set: ['dataset=math'] }, { runsDir }))).toBe(1);
  });
});
