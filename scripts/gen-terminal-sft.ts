// Writes data/terminal_sft.jsonl: supervised warm-up transcripts, so that a model that has never
// seen Qwen3's tool-call format (the randomly initialised tiny-qwen3 above all) learns to call
// `bash` before the terminal env's RL (configs/pipeline_terminal.json).
//
//   node --import tsx scripts/gen-terminal-sft.ts [out-file]     (default data/terminal_sft.jsonl)
//
// Two parts, both built from the pieces the RL env uses, so that SFT and RL see the same tokens:
// the env's initial messages (the bash tool declared under the reference's system prompt, then the
// task's instruction), every call answered with the tool's real output from an episode sandbox,
// then a short closing answer. Each transcript opens with a look at the working directory
// (`ls /app`: the same call in every transcript, which a tiny model learns first, so that its
// rollouts run commands from the start of RL).
// - One transcript per shipped task of data/terminal_tasks that no shipped config holds out
//   (`test_tasks`): each command of its solution/solve.sh as one `bash` call. Each is graded the
//   way an episode is: its tests must pass (reward 1) after its commands ran.
// - GENERATED transcripts on generated chores (terminal-warmup-tasks.ts), so the format is learnt
//   from hundreds of short, varied calls rather than from a few long ones: some look at an input
//   first (a few of those after a failed look at a wrong path), some show the result after; each
//   chore's check must fail before its commands and pass after.
// The outputs of these commands hold no times, so every byte is reproducible:
// test/cookbook/rl/terminal/shipped-tasks.test.ts regenerates the file and compares.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PythonRandom, randbelow } from '../src/cookbook/python-random.js';
import { getRenderer } from '../src/cookbook/renderers/registry.js';
import type { Message, ToolCall } from '../src/cookbook/renderers/types.js';
import { taskImage } from '../src/cookbook/rl/envs/terminal/backend.js';
import { initialMessages } from '../src/cookbook/rl/envs/terminal/env.js';
import { buildTaskImage, type BuiltImage } from '../src/cookbook/rl/envs/terminal/image.js';
import { loadHarborTasks, type HarborTask } from '../src/cookbook/rl/envs/terminal/tasks.js';
import { bashTool, harborReward } from '../src/cookbook/rl/envs/terminal/tools.js';
import { LocalEpisodeSandbox } from '../src/cookbook/sandbox/episode.js';
import type { SandboxInterface } from '../src/cookbook/sandbox/types.js';
import { getTokenizer } from '../src/cookbook/tokenizer.js';
import { handleToolCall, toolDeclaring, type Tool, type ToolDeclaringRenderer } from '../src/cookbook/tool-use/index.js';
import { warmupTasks, type WarmupTask } from './terminal-warmup-tasks.js';

const ROOT = path.join(import.meta.dirname, '..');
export const TASKS_DIR = path.join(ROOT, 'data', 'terminal_tasks');
export const SFT_FILE = path.join(ROOT, 'data', 'terminal_sft.jsonl');
/** The shipped configs whose `test_tasks` the warm-up leaves out. */
const CONFIGS = ['rl_terminal.json', 'pipeline_terminal.json'].map((f) => path.join(ROOT, 'configs', f));
export const GENERATED = 300;
const SEED = 0;
const CLOSING = 'Done: the task is complete.';
const WORKDIR = '/app';

/** The commands of solve.sh: its lines without the shebang, comments and blank lines; a `\` continuation stays one command. */
export function solutionCommands(task: HarborTask): string[] {
  const text = readFileSync(path.join(task.taskDir, 'solution', 'solve.sh'), 'utf8');
  const commands: string[] = [];
  let pending = '';
  for (const line of text.split('\n')) {
    if (!pending && (/^\s*#/.test(line) || !line.trim())) continue;
    pending += line;
    if (line.endsWith('\\')) {
      pending += '\n';
      continue;
    }
    commands.push(pending.trim());
    pending = '';
  }
  if (pending.trim()) commands.push(pending.trim());
  return commands;
}

/** Every task some shipped config holds out as its test set. */
export function heldOutTasks(): Set<string> {
  const held = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'test_tasks' && Array.isArray(x)) x.forEach((t) => held.add(String(t)));
        else walk(x);
      }
    }
  };
  for (const config of CONFIGS) walk(JSON.parse(readFileSync(config, 'utf8')));
  return held;
}

/** Runs `commands` as bash calls after the initial messages; a command may fail only where `mayFail` says so. */
async function conversation(sandbox: SandboxInterface, instruction: string, renderer: ToolDeclaringRenderer, commands: string[], mayFail = new Set<string>()): Promise<Message[]> {
  const bash = bashTool(sandbox);
  const tools = new Map<string, Tool>([[bash.name, bash]]);
  const messages = initialMessages({ instruction } as HarborTask, renderer, [bash]);
  for (const command of commands) {
    const call: ToolCall = { type: 'function', function: { name: bash.name, arguments: JSON.stringify({ command }) } };
    const { messages: results } = await handleToolCall(tools, call);
    if (results.length !== 1 || results[0].role !== 'tool') throw new Error(`bash answered ${JSON.stringify(results)}`);
    const { exit_code } = JSON.parse(results[0].content as string) as { exit_code: number };
    if ((exit_code !== 0) !== mayFail.has(command)) throw new Error(`\`${command}\` exited ${exit_code}: ${results[0].content}`);
    messages.push({ role: 'assistant', content: '', tool_calls: [call] }, results[0]);
  }
  return messages;
}

export async function transcript(task: HarborTask, renderer: ToolDeclaringRenderer): Promise<Message[]> {
  const image = await taskImage(task);
  const sandbox = await LocalEpisodeSandbox.create({ from: image.snapshot, env: image.env });
  try {
    const messages = await conversation(sandbox, task.instruction, renderer, [`ls ${image.workdir}`, ...solutionCommands(task)]).catch((e: Error) => {
      throw new Error(`${task.taskName}: ${e.message}`);
    });
    const [reward] = await harborReward({ testsDir: path.join(task.taskDir, 'tests'), sandbox })([]);
    if (reward !== 1) throw new Error(`${task.taskName}: its solution's commands earn reward ${reward}, not 1`);
    return [...messages, { role: 'assistant', content: CLOSING }];
  } finally {
    await sandbox.cleanup();
  }
}

let baseImage: Promise<BuiltImage> | null = null;
/** The generated chores' image: the shipped tasks' base with an empty working directory. */
function warmupImage(): Promise<BuiltImage> {
  baseImage ??= (async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'terminal-warmup-'));
    try {
      writeFileSync(path.join(dir, 'Dockerfile'), `FROM python:3.11-slim-bookworm\nWORKDIR ${WORKDIR}\n`);
      return await buildTaskImage(dir, { timeoutSeconds: 600 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  })();
  return baseImage;
}

/** One generated transcript to make: its chore and the calls it shows (the failing one, if any, first). */
export interface WarmupPlan {
  task: WarmupTask;
  commands: string[];
  failing: string | null;
}

/** What each generated transcript shows, drawn from one rng in order (no sandbox needed: a test can pick any). */
export function warmupPlans(count = GENERATED): WarmupPlan[] {
  const rng = new PythonRandom(SEED + 1);
  return warmupTasks(count, SEED).map((task) => {
    const looks = task.look !== null && randbelow(rng, 2) === 0;
    // A look at the input without its extension: the path guessed wrong, then looked up right.
    const guess = looks && randbelow(rng, 4) === 0 ? task.look!.replace(/\.[a-z]+$/, '') : null;
    const failing = guess !== task.look ? guess : null;
    const verifies = task.verify !== null && randbelow(rng, 3) === 0;
    const commands = [`ls ${WORKDIR}`, ...(failing ? [failing] : []), ...(looks ? [task.look!] : []), ...task.commands, ...(verifies ? [task.verify!] : [])];
    return { task, commands, failing };
  });
}

export async function warmupTranscript({ task, commands, failing }: WarmupPlan, renderer: ToolDeclaringRenderer): Promise<Message[]> {
  const image = await warmupImage();
  const sandbox = await LocalEpisodeSandbox.create({ from: image.snapshot, env: image.env });
  try {
    for (const [file, content] of Object.entries(task.files)) await sandbox.writeFile(file, content);
    if ((await sandbox.runCommand(task.check)).exitCode === 0) throw new Error(`${task.name}: its check passes before any command`);
    const messages = await conversation(sandbox, task.instruction, renderer, commands, new Set(failing ? [failing] : [])).catch((e: Error) => {
      throw new Error(`${task.name}: ${e.message}`);
    });
    const checked = await sandbox.runCommand(task.check);
    if (checked.exitCode !== 0) throw new Error(`${task.name}: its check fails after its commands: ${JSON.stringify(checked)}`);
    return [...messages, { role: 'assistant', content: CLOSING }];
  } finally {
    await sandbox.cleanup();
  }
}

export const sftRenderer = async () => toolDeclaring(getRenderer('qwen3', await getTokenizer('tiny-qwen3')), 'terminal');

/** The shipped tasks the warm-up trains on: all but the held-out ones, in the loader's order. */
export function warmupShippedTasks(tasksDir = TASKS_DIR): HarborTask[] {
  const held = heldOutTasks();
  return loadHarborTasks(tasksDir).filter((t) => !held.has(t.taskName));
}

export async function transcripts(tasksDir = TASKS_DIR): Promise<string[]> {
  const renderer = await sftRenderer();
  const out: string[] = [];
  for (const task of warmupShippedTasks(tasksDir)) out.push(JSON.stringify({ messages: await transcript(task, renderer) }));
  for (const plan of warmupPlans()) out.push(JSON.stringify({ messages: await warmupTranscript(plan, renderer) }));
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const out = path.resolve(process.argv[2] ?? SFT_FILE);
  const lines = await transcripts();
  writeFileSync(out, lines.join('\n') + '\n');
  console.log(`${lines.length} transcripts in ${path.relative(process.cwd(), out) || out}`);
}
