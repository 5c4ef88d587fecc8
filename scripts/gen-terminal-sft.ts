// Writes data/terminal_sft.jsonl: supervised warm-up transcripts on the shipped terminal tasks
// (data/terminal_tasks), so that a model that has never seen Qwen3's tool-call format (the
// randomly initialised tiny-qwen3 above all) learns to call `bash` before the terminal env's RL
// (configs/pipeline_terminal.json).
//
//   node --import tsx scripts/gen-terminal-sft.ts [out-file]     (default data/terminal_sft.jsonl)
//
// One transcript per task, built from the pieces the RL env uses, so that SFT and RL see the same
// tokens: the env's initial messages (the bash tool declared under the reference's system prompt,
// then the task's instruction); a first look at the task's working directory (`ls /app`: the same
// call in every transcript, which a tiny model learns first, so that its rollouts run commands
// from the start of RL); each command of the task's solution/solve.sh as one `bash` call; every
// call answered with the tool's real output from the task's own episode sandbox; then a short
// closing answer. Each transcript is checked the way an episode is graded: its tests must pass (reward 1)
// after its commands ran. The outputs of these commands hold no times, so every byte is
// reproducible: test/cookbook/rl/terminal/sft-data.test.ts regenerates the file and compares.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getRenderer } from '../src/cookbook/renderers/registry.js';
import type { Message, ToolCall } from '../src/cookbook/renderers/types.js';
import { taskImage } from '../src/cookbook/rl/envs/terminal/backend.js';
import { initialMessages } from '../src/cookbook/rl/envs/terminal/env.js';
import { loadHarborTasks, type HarborTask } from '../src/cookbook/rl/envs/terminal/tasks.js';
import { bashTool, harborReward } from '../src/cookbook/rl/envs/terminal/tools.js';
import { LocalEpisodeSandbox } from '../src/cookbook/sandbox/episode.js';
import { getTokenizer } from '../src/cookbook/tokenizer.js';
import { handleToolCall, toolDeclaring, type Tool, type ToolDeclaringRenderer } from '../src/cookbook/tool-use/index.js';

const ROOT = path.join(import.meta.dirname, '..');
export const TASKS_DIR = path.join(ROOT, 'data', 'terminal_tasks');
const OUT = path.resolve(process.argv[2] ?? path.join(ROOT, 'data', 'terminal_sft.jsonl'));
const CLOSING = 'Done: the task is complete.';

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

export async function transcript(task: HarborTask, renderer: ToolDeclaringRenderer): Promise<Message[]> {
  const image = await taskImage(task);
  const sandbox = await LocalEpisodeSandbox.create({ from: image.snapshot, env: image.env });
  try {
    const bash = bashTool(sandbox);
    const tools = new Map<string, Tool>([[bash.name, bash]]);
    const messages = initialMessages(task, renderer, [bash]);
    for (const command of [`ls ${image.workdir}`, ...solutionCommands(task)]) {
      const call: ToolCall = { type: 'function', function: { name: bash.name, arguments: JSON.stringify({ command }) } };
      const { messages: results } = await handleToolCall(tools, call);
      if (results.length !== 1 || results[0].role !== 'tool') throw new Error(`${task.taskName}: bash answered ${JSON.stringify(results)}`);
      const { exit_code } = JSON.parse(results[0].content as string) as { exit_code: number };
      if (exit_code !== 0) throw new Error(`${task.taskName}: \`${command}\` exited ${exit_code}: ${results[0].content}`);
      messages.push({ role: 'assistant', content: '', tool_calls: [call] }, results[0]);
    }
    const [reward] = await harborReward({ testsDir: path.join(task.taskDir, 'tests'), sandbox })([]);
    if (reward !== 1) throw new Error(`${task.taskName}: its solution's commands earn reward ${reward}, not 1`);
    return [...messages, { role: 'assistant', content: CLOSING }];
  } finally {
    await sandbox.cleanup();
  }
}

export async function transcripts(tasksDir = TASKS_DIR): Promise<string[]> {
  const renderer = toolDeclaring(getRenderer('qwen3', await getTokenizer('tiny-qwen3')), 'terminal');
  const out: string[] = [];
  for (const task of loadHarborTasks(tasksDir)) out.push(JSON.stringify({ messages: await transcript(task, renderer) }));
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const lines = await transcripts();
  writeFileSync(OUT, lines.join('\n') + '\n');
  console.log(`${lines.length} transcripts in ${path.relative(process.cwd(), OUT) || OUT}`);
}
