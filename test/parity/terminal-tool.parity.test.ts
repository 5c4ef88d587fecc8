// The terminal recipe's pieces beside the reference's harbor_rl (tinker-cookbook 0.6.1
// harbor_tools.py and harbor_env.py, run at test time by terminal_tool_cases.py): the bash tool's
// spec and the conversation prefix each tool-declaring renderer gives a task; the bash tool's
// message for given sandbox results; HarborReward's sandbox calls and reward for a tests folder and
// the reward files test.sh may leave; load_harbor_tasks on data/terminal_tasks; HarborDataset's
// batches. Both sides drive the same scripted fake sandbox (below and in the case script), which
// records every call with the SandboxInterface defaults filled in.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import type { Message } from '../../src/cookbook/renderers/types.js';
import { HARBOR_SYSTEM_PROMPT, initialMessages, TerminalDataset, TerminalEnvGroupBuilder, type TerminalEnvOptions } from '../../src/cookbook/rl/envs/terminal/env.js';
import { loadHarborTasks, type HarborTask } from '../../src/cookbook/rl/envs/terminal/tasks.js';
import { bashTool, harborReward } from '../../src/cookbook/rl/envs/terminal/tools.js';
import type { SandboxInterface, SandboxResult } from '../../src/cookbook/sandbox/types.js';
import { getTokenizer, shippedTokenizerDir } from '../../src/cookbook/tokenizer.js';
import { toolDeclaring } from '../../src/cookbook/tool-use/index.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { FAMILIES } from '../cookbook/tool-use/family-scenarios.js';
import { runPythonScript } from './reference.js';

const REPO = join(import.meta.dirname, '..', '..');
const TASKS_DIR = join(REPO, 'data/terminal_tasks');

type Result = { stdout: string; stderr: string; exit_code: number };
interface Script {
  commands?: Record<string, Result>;
  files?: Record<string, Result>;
  /** The call (0-based) after whose recording the sandbox raises. */
  raise_on?: number;
}
type Call = Record<string, unknown>;

/** The fake sandbox terminal_tool_cases.py drives the reference with, call for call. */
class ScriptedSandbox implements SandboxInterface {
  readonly sandboxId = 'fake';
  readonly calls: Call[] = [];
  constructor(private readonly script: Script) {}
  private record(call: Call): void {
    this.calls.push(call);
    if (this.calls.length - 1 === this.script.raise_on) throw new Error(`sandbox died during ${call.op}`);
  }
  private static result(r: Result): SandboxResult {
    return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exit_code, metrics: {} };
  }
  async sendHeartbeat(): Promise<void> {}
  async runCommand(command: string, opts: { workdir?: string | null; timeout?: number; maxOutputBytes?: number | null } = {}): Promise<SandboxResult> {
    this.record({ op: 'run_command', command, workdir: opts.workdir ?? null, timeout: opts.timeout ?? 60, max_output_bytes: opts.maxOutputBytes ?? null });
    return ScriptedSandbox.result(this.script.commands?.[command] ?? { stdout: '', stderr: '', exit_code: 0 });
  }
  async readFile(path: string, opts: { maxBytes?: number | null; timeout?: number } = {}): Promise<SandboxResult> {
    this.record({ op: 'read_file', path, max_bytes: opts.maxBytes ?? null, timeout: opts.timeout ?? 60 });
    return ScriptedSandbox.result(this.script.files?.[path] ?? { stdout: '', stderr: `cat: ${path}: No such file or directory`, exit_code: 1 });
  }
  async writeFile(path: string, content: string | Uint8Array, opts: { executable?: boolean; timeout?: number } = {}): Promise<SandboxResult> {
    this.record({ op: 'write_file', path, content, executable: opts.executable ?? false, timeout: opts.timeout ?? 60 });
    return ScriptedSandbox.result({ stdout: '', stderr: '', exit_code: 0 });
  }
  async cleanup(): Promise<void> {}
}

// ------------------------------------------------------------------ renderers and prompt tasks

const RENDERERS = [
  { renderer: 'qwen3', tokenizer_dir: shippedTokenizerDir('qwen3') },
  ...FAMILIES.filter((f) => f.renderer === 'kimi_k2').map((f) => ({ renderer: f.renderer, tokenizer_dir: f.tokenizerDir() })),
];
const PROMPT_TASKS = ['count-error-lines', 'fix-permissions'];
const EXTRA_PROMPT_TASKS = [
  { task_name: 'unicode', instruction: 'Füge „Grüße“ 🎉 in /app/a.txt ein:\n\n```bash\necho "x\\ty" > \'/app/a b\'\n```\n\u2028tail\n', task_dir: '/nowhere/unicode' },
];

// ------------------------------------------------------------------ bash tool outputs

const ok = (stdout: string, stderr = '', exit_code = 0): Script => ({ commands: { cmd: { stdout, stderr, exit_code } } });
const BASH: Array<{ id: string; command: string; command_timeout: number; script: Script }> = [
  { id: 'plain', command: 'ls /', command_timeout: 120, script: { commands: { 'ls /': { stdout: 'bin\netc\n', stderr: '', exit_code: 0 } } } },
  { id: 'empty, exit 1', command: 'false', command_timeout: 120, script: { commands: { false: { stdout: '', stderr: '', exit_code: 1 } } } },
  { id: 'unicode', command: 'cmd', command_timeout: 120, script: ok('héllo wörld ✓ 日本語 🎉\n', 'Fehler: „kaputt“ ☠\n', 2) },
  { id: 'quotes and backslashes', command: 'cmd', command_timeout: 7, script: ok(`"double" 'single' \\ back\\slash \\" \`tick\` $HOME`, '\\n is not a newline') },
  { id: 'control characters', command: 'cmd', command_timeout: 120, script: ok('\x00\x01\x1b[31mred\x1b[0m\x7f\r\n\b\f\v\t\x1f\x85\u2028\u2029\ufeff', '\u00a0\u200b\ufffe\uffff', 127) },
  { id: 'lone surrogates', command: 'cmd', command_timeout: 120, script: ok('a\ud800b\udc00c', '\udfff') },
  { id: '> 16384 characters', command: 'cmd', command_timeout: 120, script: ok('a'.repeat(20000), 'e'.repeat(16384) + 'cut', 124) },
  { id: 'astral character straddling the cut (kept)', command: 'cmd', command_timeout: 120, script: ok(`${'x'.repeat(16383)}😀tail`, `${'y'.repeat(16382)}é😀z`) },
  { id: 'astral character just past the cut (dropped)', command: 'cmd', command_timeout: 120, script: ok(`${'x'.repeat(16384)}😀`, `${'y'.repeat(16383)}é😀`) },
  { id: 'astral characters only', command: 'cmd', command_timeout: 120, script: ok('😀'.repeat(17000), '𝄞'.repeat(16384)) },
  { id: 'negative exit code', command: 'kill -9 $$', command_timeout: 120, script: { commands: { 'kill -9 $$': { stdout: 'partial', stderr: 'Killed', exit_code: -9 } } } },
  { id: 'the sandbox raises', command: 'cmd', command_timeout: 120, script: { raise_on: 0 } },
];

// ------------------------------------------------------------------ HarborReward

const RUN_TESTS = 'bash /tests/test.sh';
const txt = (stdout: string, exit_code = 0) => ({ '/logs/verifier/reward.txt': { stdout, stderr: '', exit_code } });
const json = (stdout: string, exit_code = 0) => ({ '/logs/verifier/reward.json': { stdout, stderr: '', exit_code } });
type Tree = 'full' | 'small' | 'undecodable' | 'missing';
const REWARD_TXT = [
  '1', ' 0.5\n', 'nan', 'inf', '1e-3', 'abc', '-inf', '+Infinity', 'NaN\n', '-0', '0', '1_000.5', '_1', '1__0', '1_', '1e', '.5', '5.', '.',
  '0x10', '١٢', '２.５', '\u00a00.25\u2003', '\x1c0.75\x1f', '\x1c', '  \n', '1 2', '1e400', '-1e400', '1\x00', '1.5abc', '+.5e+2', 'infinityy',
];
const REWARD_JSON = [
  '{"reward": 0.75}', '{"other": 1}', '{"reward": ', '[1]', '5', 'null', '"x"', '{"reward": null}', '{"reward": true}', '{"reward": false}',
  '{"reward": "0.5"}', '{"reward": " 1_0 "}', '{"reward": "\\u001c1"}', '{"reward": [1]}', '{"reward": {"x": 1}}', '{"reward": NaN}',
  '{"reward": -Infinity}', '{"reward": 1e400}', '{"reward": 3}', '{"reward": "abc"}', '{"reward": 1, "reward": 0.25}',
  `{"reward": 1${'0'.repeat(400)}}`, `{"reward": ${'9'.repeat(30)}}`, '\ufeff{"reward": 1}', '{"reward": 1} x', ' {"reward": 0.5}\n',
];
const REWARDS: Array<{ id: string; tree: Tree; grader_timeout: number; script: Script }> = [
  { id: 'a tests tree (nested folders, .sh files, links, CRLF, a BOM), reward 1', tree: 'full', grader_timeout: 60, script: { files: txt('1') } },
  { id: 'the grader timeout, test.sh failing', tree: 'small', grader_timeout: 17, script: { commands: { [RUN_TESTS]: { stdout: 'FAILED', stderr: 'boom', exit_code: 1 } }, files: txt('0') } },
  ...REWARD_TXT.map((t) => ({ id: `reward.txt ${JSON.stringify(t)}`, tree: 'small' as const, grader_timeout: 60, script: { files: txt(t) } })),
  ...REWARD_JSON.map((j) => ({ id: `reward.json ${JSON.stringify(j).slice(0, 60)}`, tree: 'small' as const, grader_timeout: 60, script: { files: json(j) } })),
  { id: 'reward.txt unreadable (exit 1), reward.json read', tree: 'small', grader_timeout: 60, script: { files: { ...txt('1', 1), ...json('{"reward": 0.25}') } } },
  { id: 'reward.txt blank, reward.json read', tree: 'small', grader_timeout: 60, script: { files: { ...txt(' \n\x1c'), ...json('{"reward": 0.5}') } } },
  { id: 'reward.txt wins over reward.json', tree: 'small', grader_timeout: 60, script: { files: { ...txt('0.125'), ...json('{"reward": 0.5}') } } },
  { id: 'reward.json unreadable (exit 2)', tree: 'small', grader_timeout: 60, script: { files: json('{"reward": 1}', 2) } },
  { id: 'both reward files missing', tree: 'small', grader_timeout: 60, script: {} },
  { id: 'a tests file that is not UTF-8', tree: 'undecodable', grader_timeout: 60, script: { files: txt('1') } },
  { id: 'no tests folder', tree: 'missing', grader_timeout: 60, script: { files: txt('1') } },
  ...[0, 1, 2, 3, 4, 5, 6].map((k) => ({ id: `the sandbox raises at call ${k}`, tree: 'small' as const, grader_timeout: 60, script: { files: { ...txt(' \n'), ...json('{"reward": 1}') }, raise_on: k } })),
];

/** Test folders for the reward cases, under a temp dir: what each `tree` stands for. */
function writeTrees(root: string): Record<Tree, string> {
  const put = (path: string, content: string | Buffer) => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, content);
  };
  const full = join(root, 'full', 'tests');
  put(join(full, 'test.sh'), '#!/bin/bash\ncd /tests && python3 check.py\n');
  chmodSync(join(full, 'test.sh'), 0o755);
  put(join(full, 'check.py'), 'print("grüße 🎉")\n');
  put(join(full, 'crlf.txt'), 'one\r\ntwo\rthree\n\r\n');
  put(join(full, 'bom.txt'), '\ufeffbom\n');
  put(join(full, 'Alpha.txt'), 'A');
  put(join(full, 'a.SH'), 'upper suffix');
  put(join(full, '.sh'), 'a dot file named .sh');
  put(join(full, '..sh'), 'suffix .sh after a dot');
  put(join(full, 'x.sh.'), 'trailing dot');
  put(join(full, '.hidden.sh'), 'echo hidden');
  put(join(full, 'ünï.txt'), 'non-ASCII name');
  put(join(full, '日本.sh'), 'echo 日本');
  put(join(full, 'lib', 'helper.sh'), 'helper() { :; }\n');
  put(join(full, 'lib', 'deep', 'data.json'), '{"k": [1, 2]}');
  put(join(full, 'lib', 'deep', 'z.sh'), '');
  put(join(full, 'lib', 'b.txt'), 'b');
  put(join(full, 'zeta', 'z.sh'), 'z');
  mkdirSync(join(full, 'empty-dir'));
  symlinkSync('test.sh', join(full, 'link-to-file.sh'));
  symlinkSync('lib', join(full, 'link-to-dir'));
  symlinkSync('nowhere', join(full, 'dangling'));
  const small = join(root, 'small', 'tests');
  put(join(small, 'test.sh'), '#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n');
  put(join(small, 'sub', 'data.txt'), 'data\n');
  const undecodable = join(root, 'undecodable', 'tests');
  put(join(undecodable, 'a.txt'), 'fine');
  put(join(undecodable, 'b.bin'), Buffer.from([0x66, 0xff, 0xfe, 0x00]));
  put(join(undecodable, 'test.sh'), 'exit 0\n');
  return { full, small, undecodable, missing: join(root, 'missing', 'tests') };
}

// ------------------------------------------------------------------ batching

const BATCHING = [
  { n: 0, batch_size: 3 },
  { n: 1, batch_size: 1 },
  { n: 5, batch_size: 2 },
  { n: 6, batch_size: 3 },
  { n: 7, batch_size: 10 },
].map((b) => ({ ...b, indices: [-1, ...Array.from({ length: Math.ceil(b.n / b.batch_size) + 2 }, (_, i) => i)] }));

// ------------------------------------------------------------------ the reference

/** The reference's JSON for a float Python's json.dumps writes as NaN/Infinity. */
const jsonable = (x: unknown): unknown =>
  typeof x === 'number' && !Number.isFinite(x) ? { float: Number.isNaN(x) ? 'nan' : x > 0 ? 'inf' : '-inf' } : Array.isArray(x) ? x.map(jsonable) : x && typeof x === 'object' ? Object.fromEntries(Object.entries(x).map(([k, v]) => [k, jsonable(v)])) : x;

interface Reference {
  system_prompt: string;
  spec: unknown;
  tasks: Array<{ task_name: string; instruction: string; task_dir: string; config: Record<string, unknown> }>;
  renderers: Array<{ renderer: string; prefixes: Array<{ messages: Message[]; tokens: number[] }> }>;
  bash: Array<{ calls: Call[]; result: { messages: Message[]; should_stop: boolean; metrics: Record<string, number>; metadata: Record<string, unknown> } }>;
  rewards: Array<{ calls: Call[]; reward: unknown; metrics: unknown }>;
  batching: Array<{ len: number; batches: Record<string, number[]> }>;
}
let reference: Reference;
let tmp: string;
let trees: Record<Tree, string>;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'h55tpar-'));
  trees = writeTrees(tmp);
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({
    tasks_dir: TASKS_DIR,
    prompt_tasks: PROMPT_TASKS,
    extra_prompt_tasks: EXTRA_PROMPT_TASKS,
    renderers: RENDERERS,
    bash: BASH,
    rewards: REWARDS.map((r) => ({ tests_dir: trees[r.tree], grader_timeout: r.grader_timeout, script: r.script })),
    batching: BATCHING,
  });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'terminal_tool_cases.py')], {
    env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' },
    input,
  });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const OPTIONS: TerminalEnvOptions = {
  maxTurns: 3, sandboxTimeout: 600, commandTimeout: 120, graderTimeout: 60, maxTrajectoryTokens: 4096,
  maxGenerationTokens: null, contextOverflowReward: -0.1, storageBytes: 1 << 20, memoryBytes: 1 << 26, maxProcesses: 8,
};

describe('terminal recipe beside the reference (harbor_rl)', () => {
  it("the bash tool's spec (key order included) and the system prompt", () => {
    expect(JSON.stringify(bashTool(new ScriptedSandbox({})).toSpec())).toBe(JSON.stringify(reference.spec));
    expect(HARBOR_SYSTEM_PROMPT).toBe(reference.system_prompt);
  });

  it.each(RENDERERS.map((r, i) => [r.renderer, i] as const))('%s: the initial messages and their tokens', async (name, i) => {
    const r = RENDERERS[i];
    const renderer = toolDeclaring(getRenderer(name, await getTokenizer(`terminal-parity:${r.tokenizer_dir}`, r.tokenizer_dir)), 'terminal');
    const tasks = loadHarborTasks(TASKS_DIR).filter((t) => PROMPT_TASKS.includes(t.taskName));
    const all: HarborTask[] = [...tasks, ...EXTRA_PROMPT_TASKS.map((t) => ({ taskName: t.task_name, instruction: t.instruction, taskDir: t.task_dir, config: {} }))];
    const expected = reference.renderers[i].prefixes;
    expect(all.length).toBe(expected.length);
    for (const [k, task] of all.entries()) {
      const messages = initialMessages(task, renderer, [bashTool(new ScriptedSandbox({}))]);
      expect(JSON.parse(JSON.stringify(messages)), `${task.taskName}: messages`).toEqual(expected[k].messages);
      expect(modelInputToInts(renderer.buildGenerationPrompt(messages)), `${task.taskName}: tokens`).toEqual(expected[k].tokens);
    }
  });

  it.each(BASH.map((c, i) => [c.id, i] as const))('bash tool: %s', async (_id, i) => {
    const c = BASH[i];
    const sandbox = new ScriptedSandbox(c.script);
    const ours = await bashTool(sandbox, c.command_timeout).run({ arguments: { command: c.command }, callId: 'call-1' });
    const ref = reference.bash[i];
    expect(sandbox.calls).toEqual(ref.calls);
    expect(ours.messages.length).toBe(ref.result.messages.length);
    for (const [k, m] of ours.messages.entries()) expect(m.content === ref.result.messages[k].content, `message ${k}'s content, byte for byte`).toBe(true);
    expect({ messages: ours.messages, should_stop: ours.shouldStop, metrics: ours.metrics, metadata: ours.metadata }).toEqual(ref.result);
  });

  it.each(REWARDS.map((c, i) => [c.id, i] as const))('HarborReward: %s', async (_id, i) => {
    const c = REWARDS[i];
    const sandbox = new ScriptedSandbox(c.script);
    const [reward, metrics] = await harborReward({ testsDir: trees[c.tree], sandbox, graderTimeout: c.grader_timeout })([{ role: 'user', content: 'done' }]);
    const ref = reference.rewards[i];
    expect(sandbox.calls, 'sandbox calls').toEqual(ref.calls);
    expect({ reward: jsonable(reward), metrics: jsonable(metrics) }).toEqual({ reward: ref.reward, metrics: ref.metrics });
  });

  it('load_harbor_tasks on data/terminal_tasks: names, order, instructions, task.toml', () => {
    const ours = loadHarborTasks(TASKS_DIR).map((t) => ({ task_name: t.taskName, instruction: t.instruction, task_dir: t.taskDir, config: JSON.parse(JSON.stringify(t.config)) }));
    expect(ours.length).toBeGreaterThan(10);
    expect(ours).toEqual(reference.tasks);
  });

  it.each(BATCHING.map((b, i) => [b.n, b.batch_size, i] as const))('HarborDataset batches: %i tasks, batch size %i', async (n, batchSize, i) => {
    const task = loadHarborTasks(TASKS_DIR)[0];
    const renderer = toolDeclaring(getRenderer('qwen3', await getTokenizer(`terminal-parity:${RENDERERS[0].tokenizer_dir}`, RENDERERS[0].tokenizer_dir)), 'terminal');
    const builders = Array.from({ length: n }, () => new TerminalEnvGroupBuilder(task, renderer, 1, OPTIONS));
    const dataset = new TerminalDataset(builders, batchSize);
    const ref = reference.batching[i];
    expect(dataset.length).toBe(ref.len);
    const batches = Object.fromEntries(BATCHING[i].indices.map((k) => [String(k), dataset.getBatch(k).map((b) => builders.indexOf(b as TerminalEnvGroupBuilder))]));
    expect(batches).toEqual(ref.batches);
  });
});
