// terminal_bench beside the reference (tinker-cookbook 0.6.1 eval/benchmarks/_terminal_bench.py, run
// at test time by eval_terminal_bench_cases.py): _parse_task on the shipped rows and on edge rows
// (archives the reference side builds with tarfile in the GNU, pax and ustar formats, broken ones,
// task.yaml texts, fallback columns); the bash tool's spec, the command it runs and its output for
// given results (elision, cuts, non-ASCII); the reward and metrics for given test runs and histories;
// the system prompt and MAX_TURNS.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseTerminalBenchRow, TERMINAL_BENCH_MAX_TURNS } from '../../src/cookbook/eval/suites/terminal-bench.js';
import { terminalBenchBashTool, terminalBenchReward, TERMINAL_BENCH_SYSTEM_PROMPT } from '../../src/cookbook/eval/suites/terminal-bench-env.js';
import { readRows } from '../../src/cookbook/hf/readers.js';
import type { Message } from '../../src/cookbook/renderers/types.js';
import type { SandboxInterface, SandboxResult } from '../../src/cookbook/sandbox/types.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const SHIPPED = join(import.meta.dirname, '..', '..', 'data', 'eval', 'terminal_bench', 'data', 'test-00000-of-00001.parquet');

const YAML = [
  'instruction: |-\n  line one\n  line two\n\n  after blank\nother: x\n',
  'instruction: |\n  keep final\n\n\nnext: 1\n',
  'instruction: |+\n  keep all\n\n\nnext: 1\n',
  'instruction: >\n  folded one\n  folded two\n\n  para two\n    indented more\n  back\n',
  'instruction: >-\n  a\n  b\n',
  'instruction: |2\n    two extra\n  base\n',
  'instruction: | # a note\n  text\n',
  'instruction: |\r\n  crlf line\r\n  two\r\n',
  'instruction: "double \\"quoted\\" with \\t tab\\n and \\u00e9 and \\x41"\n',
  'instruction: "first line\n  second line\n\n  third   \n  fourth"\n',
  'instruction: "joined\\\n  \\ here"\n',
  "instruction: 'it''s single\n  and folded'\n",
  'instruction: plain text here # comment\n',
  'instruction: plain first\n  continues here\n\n  new para\nnext: 2\n',
  'author: me\ninstruction: second key\n',
  'title: none\n',
  'instruction:\nnext: 1\n',
  'instruction: ~\n',
  'instruction: yes\n',
  'instruction: 42\n',
  'instruction: "unterminated\n',
  'instruction: first\ninstruction: last wins\n',
];

const big = (n: number, unit: string) => Array.from({ length: n }, (_, i) => (i % 97 === 0 ? '\n' : unit)).join('');
const TOOL = [
  { command: 'ls', exit_code: 0, stdout: 'a\nb\n', stderr: '' },
  { command: 'cat missing', exit_code: 1, stdout: '', stderr: 'cat: missing: No such file or directory\n' },
  { command: 'seq 1 3000', exit_code: 0, stdout: 'x'.repeat(10000), stderr: '' },
  { command: 'yes | head', exit_code: 0, stdout: big(10001, 'y'), stderr: 'e'.repeat(3000) },
  { command: 'big', exit_code: 0, stdout: big(25000, 'z') + 'TAIL', stderr: '' },
  { command: 'emoji', exit_code: 2, stdout: big(12000, '😀é'), stderr: big(2500, '字') },
  { command: 'ctl', exit_code: 0, stdout: 'tab\tnul\u0000bell\u0007 "q" \\ \u2028', stderr: '' },
];

const call = { id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command": "ls"}' } };
const HISTORY: Message[] = [
  { role: 'system', content: 's' },
  { role: 'user', content: '## Task\nt' },
  { role: 'assistant', content: 'look', tool_calls: [call] } as Message,
  { role: 'tool', content: '{}' },
  { role: 'assistant', content: 'again', tool_calls: [call, call] } as Message,
  { role: 'tool', content: '{}' },
  { role: 'assistant', content: 'no calls', tool_calls: [] } as Message,
  { role: 'assistant', content: 'done' },
];
const REWARD = [
  { test_script: '#!/bin/bash\nexit 0\n', run: { exit_code: 0, stdout: 'ok', stderr: '' }, history: HISTORY },
  { test_script: 'x', run: { exit_code: 1, stdout: 'FAILED', stderr: '' }, history: HISTORY.slice(0, 3) },
  { test_script: 'x', run: null, history: HISTORY },
  { test_script: '', run: { exit_code: 0, stdout: '', stderr: '' }, history: HISTORY },
];

interface Parsed {
  instruction: string;
  test_script: string;
  setup_files: Array<[string, string]>;
}
let reference: {
  shipped: Parsed[];
  edge_archives: Array<Parsed & { archive_b64: string }>;
  rows: Parsed[];
  yaml: string[];
  tool: Array<{ contents: string[]; calls: unknown[]; commands_executed: string[] }>;
  reward: Array<{ reward: number; metrics: Record<string, number>; calls: unknown[] }>;
  spec: unknown;
  system_prompt: string;
  max_turns: number;
};
let shippedRows: Array<Record<string, unknown>>;
let rows: Array<Record<string, unknown>>;

beforeAll(async () => {
  shippedRows = [];
  for await (const { data } of readRows({ absPath: SHIPPED, displayPath: 'shipped', kind: 'parquet' }, undefined, { bytes: true })) shippedRows.push(data);
  const archive = shippedRows[0].archive as Uint8Array;
  rows = [
    { task_id: 'a', instruction: 'from the instruction column', test_script: 'echo hi' },
    { task_yaml: 'title: none\n', task: 'from the task column', description: 'not this' },
    { task_yaml: 'instruction: the yaml wins\n', instruction: 'not this', run_tests: 'bash run', test_script: null },
    { task_yaml: 'x: 1\n', description: 'archive as a list of byte values', archive: [...archive] },
    { task_yaml: 'instruction: a string archive\n', archive: 'not bytes', run_tests: 'fallback tests' },
    { task: null, instruction: 'after a null task', test_script: 7 },
    { task_yaml: '', archive: null },
  ];
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({ shipped: SHIPPED, rows, yaml: YAML, tool: TOOL, reward: REWARD });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'eval_terminal_bench_cases.py')], { env: { ...process.env, HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1' }, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 180_000);

const ours = (row: Record<string, unknown>): Parsed => {
  const p = parseTerminalBenchRow(row);
  return { instruction: p.instruction, test_script: p.testScript, setup_files: [...p.setupFiles] };
};

/** A sandbox that answers every command with `result` (or fails, when null) and keeps the calls as the reference's fake does. */
function fakeSandbox(result: { exit_code: number; stdout: string; stderr: string } | null) {
  const calls: unknown[] = [];
  const sandbox = {
    sandboxId: 'fake',
    async runCommand(command: string, opts: { workdir?: string | null; timeout?: number; maxOutputBytes?: number | null } = {}): Promise<SandboxResult> {
      calls.push({ command, workdir: opts.workdir ?? null, timeout: opts.timeout ?? 60, max_output_bytes: opts.maxOutputBytes ?? null });
      if (!result) throw new Error('sandbox gone');
      return { exitCode: result.exit_code, stdout: result.stdout, stderr: result.stderr, metrics: {} };
    },
  } as unknown as SandboxInterface;
  return { sandbox, calls };
}

describe('terminal_bench beside the reference', () => {
  it('_parse_task on the shipped rows: the same instruction, test script and setup files, in order', () => {
    expect(shippedRows.map(ours)).toEqual(reference.shipped);
    expect(reference.shipped.every((p) => p.instruction && p.test_script && p.setup_files.length > 0)).toBe(true);
  });

  it('archives in the GNU, pax and ustar formats, links, solutions, dot names, bad UTF-8 and broken archives', () => {
    for (const edge of reference.edge_archives) {
      const { archive_b64, ...expected } = edge;
      expect(ours({ task_id: 'edge', task_yaml: 'instruction: edge\n', archive: Buffer.from(archive_b64, 'base64') }), archive_b64.slice(0, 16)).toEqual(expected);
    }
  });

  it('rows of other shapes: the fallback columns, an archive as byte values or a string, nulls', () => {
    expect(rows.map(ours)).toEqual(reference.rows);
  });

  it("task.yaml's instruction: block, quoted and plain scalars, as PyYAML reads them", () => {
    expect(YAML.map((y) => ours({ task_yaml: y }).instruction)).toEqual(reference.yaml);
  });

  it('the bash tool: its spec, the command it runs (PAGER=cat, /app, 60 s, 16000 bytes) and its JSON output', async () => {
    expect(terminalBenchBashTool(fakeSandbox(null).sandbox).toSpec()).toEqual(reference.spec);
    for (const [i, c] of TOOL.entries()) {
      const { sandbox, calls } = fakeSandbox(c);
      const result = await terminalBenchBashTool(sandbox).run({ arguments: { command: c.command }, callId: 'x' });
      expect(result.messages.map((m) => m.content), c.command).toEqual(reference.tool[i].contents);
      expect(calls).toEqual(reference.tool[i].calls);
    }
  });

  it('the reward: run_tests.sh exit 0 → 1, else 0; correct, num_turns and num_commands from the history; no test script', async () => {
    for (const [i, c] of REWARD.entries()) {
      const { sandbox, calls } = fakeSandbox(c.run);
      const [reward, metrics] = await terminalBenchReward(sandbox, c.test_script)(c.history);
      expect({ reward, metrics, calls }).toEqual(reference.reward[i]);
    }
  });

  it('the system prompt and MAX_TURNS', () => {
    expect(TERMINAL_BENCH_SYSTEM_PROMPT).toBe(reference.system_prompt);
    expect(TERMINAL_BENCH_MAX_TURNS).toBe(reference.max_turns);
  });
});
