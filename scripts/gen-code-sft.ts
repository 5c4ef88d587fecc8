// Writes data/code_rl/warmup_problems.jsonl and data/code_rl/sft_tool_calls.jsonl: a set of small
// stdin/stdout problems in DeepCoder's row layout, and supervised warm-up transcripts on them, so
// that a model that has never seen Qwen3's tool-call format (the randomly initialised tiny-qwen3
// above all) learns to call `check_solution` and to answer in a code fence before code_rl's RL
// (configs/pipeline_code_tool.json).
//
//   node --import tsx scripts/gen-code-sft.ts [out-dir] [--problems-only]     (default data/code_rl/)
//
// The problems come from a few families (two integers, one integer and a constant, a string, a list,
// divisibility), each with three tests whose first is the statement's sample, drawn with Python's
// random.Random(SEED) so the files are reproducible. One transcript per problem, built from the
// pieces the RL env uses, so that SFT and RL see the same tokens:
// - the system message is the Qwen3 renderer's createConversationPrefixWithTools for the env's
//   `check_solution` tool, then the problem as the env words it (LiveCodeBench's prompt);
// - the assistant calls `check_solution` with its code (no text around the call); every fifth
//   problem's first attempt has a bug, so the transcript shows a failing check before the fix;
// - the tool message is what the env appends: handleToolCall on that call, i.e. the local
//   sandbox's real verdict from running the problem's tests;
// - the assistant answers with the passing code in a ```python fence, which the env's reward grades
//   correct (format 1, correct 1).
// Every byte is reproducible but the sandbox's `execution_time`, a measured wall time:
// test/cookbook/rl/code-sft-data.test.ts regenerates the files and compares them with those times
// masked (the transcripts in the fuller tier: --problems-only skips the sandbox runs).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getRenderer } from '../src/cookbook/renderers/registry.js';
import type { Message, ToolCall } from '../src/cookbook/renderers/types.js';
import { PythonRandom, randbelow } from '../src/cookbook/python-random.js';
import { checkSolutionTool, type CodeEnvOptions } from '../src/cookbook/rl/envs/code/env.js';
import { toolDeclaring, type ToolDeclaringRenderer } from '../src/cookbook/tool-use/index.js';
import { codeTaskFromRow, type CodeTask } from '../src/cookbook/rl/envs/code/tasks.js';
import { LocalSandbox } from '../src/cookbook/sandbox/index.js';
import { getTokenizer } from '../src/cookbook/tokenizer.js';
import { handleToolCall, type Tool } from '../src/cookbook/tool-use/index.js';

const ROOT = path.join(import.meta.dirname, '..');
const args = process.argv.slice(2);
const PROBLEMS_ONLY = args.includes('--problems-only');
const OUT = path.resolve(args.find((a) => !a.startsWith('--')) ?? path.join(ROOT, 'data', 'code_rl'));
export const PROBLEMS_FILE = 'warmup_problems.jsonl';
export const SFT_FILE = 'sft_tool_calls.jsonl';
const SEED = 0;
const BUGGY_EVERY = 5;

/** One problem: its statement, a reference solution, a wrong one, and the answer for an input. */
interface Family {
  statement: string;
  solution: string;
  bug: string;
  input: (rng: PythonRandom) => string;
  answer: (input: string) => string;
}

const int = (rng: PythonRandom, lo: number, hi: number) => lo + randbelow(rng, hi - lo + 1);
const word = (rng: PythonRandom, min = 3, max = 9) =>
  Array.from({ length: int(rng, min, max) }, () => String.fromCharCode(97 + randbelow(rng, 26))).join('');
const ints = (line: string) => line.trim().split(/\s+/).map(Number);

const TWO_INTS = 'You are given two integers A and B on one line, separated by a space.';
const READ_TWO = 'a, b = map(int, input().split())';
const twoInts: Array<[string, string, string, (a: number, b: number) => number]> = [
  ['Print A + B.', 'print(a + b)', 'print(a - b)', (a, b) => a + b],
  ['Print A - B.', 'print(a - b)', 'print(b - a)', (a, b) => a - b],
  ['Print A * B.', 'print(a * b)', 'print(a + b)', (a, b) => a * b],
  ['Print the larger of the two.', 'print(max(a, b))', 'print(min(a, b))', (a, b) => Math.max(a, b)],
  ['Print the smaller of the two.', 'print(min(a, b))', 'print(max(a, b))', (a, b) => Math.min(a, b)],
  ['Print the absolute difference |A - B|.', 'print(abs(a - b))', 'print(a - b)', (a, b) => Math.abs(a - b)],
];

const withConstant: Array<[(k: number) => string, (k: number) => string, (k: number) => string, (n: number, k: number) => number]> = [
  [(k) => `Print N multiplied by ${k}.`, (k) => `print(n * ${k})`, (k) => `print(n + ${k})`, (n, k) => n * k],
  [(k) => `Print N plus ${k}.`, (k) => `print(n + ${k})`, (k) => `print(n - ${k})`, (n, k) => n + k],
  [(k) => `Print the remainder of N divided by ${k}.`, (k) => `print(n % ${k})`, (k) => `print(n // ${k})`, (n, k) => n % k],
  [(k) => `Print N divided by ${k}, rounded down.`, (k) => `print(n // ${k})`, (k) => `print(n % ${k})`, (n, k) => Math.floor(n / k)],
];

const strings: Array<[string, string, string, (s: string) => string]> = [
  ['Print S reversed.', 'print(s[::-1])', 'print(s)', (s) => [...s].reverse().join('')],
  ['Print S in upper case.', 'print(s.upper())', 'print(s)', (s) => s.toUpperCase()],
  ['Print the length of S.', 'print(len(s))', 'print(len(s) - 1)', (s) => String(s.length)],
  ['Print the first character of S.', 'print(s[0])', 'print(s[-1])', (s) => s[0]],
  ['Print the last character of S.', 'print(s[-1])', 'print(s[0])', (s) => s[s.length - 1]],
  ['Print S twice, with no space between.', 'print(s + s)', 'print(s)', (s) => s + s],
  ['Print S with its first and last characters swapped.', 'print(s[-1] + s[1:-1] + s[0])', 'print(s[::-1])', (s) => s[s.length - 1] + s.slice(1, -1) + s[0]],
];

const lists: Array<[string, string, string, (a: number[]) => number]> = [
  ['Print their sum.', 'print(sum(a))', 'print(a[0])', (a) => a.reduce((x, y) => x + y, 0)],
  ['Print the largest of them.', 'print(max(a))', 'print(min(a))', (a) => Math.max(...a)],
  ['Print the smallest of them.', 'print(min(a))', 'print(max(a))', (a) => Math.min(...a)],
  ['Print how many of them are even.', 'print(sum(1 for x in a if x % 2 == 0))', 'print(sum(1 for x in a if x % 2 == 1))', (a) => a.filter((x) => x % 2 === 0).length],
  ['Print the last of them.', 'print(a[-1])', 'print(a[0])', (a) => a[a.length - 1]],
];

function families(): Family[] {
  const out: Family[] = [];
  for (const [task, solve, bug, f] of twoInts) {
    out.push({
      statement: `${TWO_INTS} ${task}\n\nConstraints: -1000 <= A, B <= 1000.`,
      solution: `${READ_TWO}\n${solve}`,
      bug: `${READ_TWO}\n${bug}`,
      input: (rng) => `${int(rng, -1000, 1000)} ${int(rng, -1000, 1000)}\n`,
      answer: (input) => `${f(...(ints(input) as [number, number]))}\n`,
    });
  }
  for (const [task, solve, bug, f] of withConstant) {
    for (let k = 2; k <= 9; k++) {
      out.push({
        statement: `You are given an integer N. ${task(k)}\n\nConstraints: 0 <= N <= 10^6.`,
        solution: `n = int(input())\n${solve(k)}`,
        bug: `n = int(input())\n${bug(k)}`,
        input: (rng) => `${int(rng, 0, 1_000_000)}\n`,
        answer: (input) => `${f(Number(input), k)}\n`,
      });
    }
  }
  for (const [task, solve, bug, f] of strings) {
    out.push({
      statement: `You are given a string S of lowercase English letters. ${task}\n\nConstraints: 2 <= |S| <= 100.`,
      solution: `s = input()\n${solve}`,
      bug: `s = input()\n${bug}`,
      input: (rng) => `${word(rng)}\n`,
      answer: (input) => `${f(input.trim())}\n`,
    });
  }
  for (const letter of 'aeiou') {
    out.push({
      statement: `You are given a string S of lowercase English letters. Print how many times the letter ${letter} occurs in S.\n\nConstraints: 1 <= |S| <= 100.`,
      solution: `s = input()\nprint(s.count('${letter}'))`,
      bug: `s = input()\nprint(len(s))`,
      input: (rng) => `${word(rng, 5, 12)}\n`,
      answer: (input) => `${[...input.trim()].filter((c) => c === letter).length}\n`,
    });
  }
  for (const [task, solve, bug, f] of lists) {
    out.push({
      statement: `The first line holds N. The second line holds N integers. ${task}\n\nConstraints: 1 <= N <= 100, -1000 <= each integer <= 1000.`,
      solution: `n = int(input())\na = list(map(int, input().split()))\n${solve}`,
      bug: `n = int(input())\na = list(map(int, input().split()))\n${bug}`,
      input: (rng) => {
        const a = Array.from({ length: int(rng, 2, 6) }, () => int(rng, -1000, 1000));
        return `${a.length}\n${a.join(' ')}\n`;
      },
      answer: (input) => `${f(ints(input.split('\n')[1]))}\n`,
    });
  }
  for (let k = 2; k <= 9; k++) {
    out.push({
      statement: `You are given an integer N. Print Yes if N is divisible by ${k}, and No otherwise.\n\nConstraints: 1 <= N <= 10^6.`,
      solution: `n = int(input())\nprint('Yes' if n % ${k} == 0 else 'No')`,
      bug: `n = int(input())\nprint('Yes')`,
      // Every other draw a multiple of k, so both answers are tested.
      input: (rng) => `${randbelow(rng, 2) ? k * int(rng, 1, 1000) : int(rng, 1, 1_000_000)}\n`,
      answer: (input) => (Number(input) % k === 0 ? 'Yes\n' : 'No\n'),
    });
  }
  return out;
}

/** The problem as a DeepCoder row: the statement with its first test as the sample, and three tests. */
function problemRow(f: Family, rng: PythonRandom): Record<string, string> {
  const tests = Array.from({ length: 3 }, () => {
    const input = f.input(rng);
    return { input, output: f.answer(input), testtype: 'stdin_stdout' };
  });
  const problem = `${f.statement}\n\nSample Input 1\n\n${tests[0].input}\nSample Output 1\n\n${tests[0].output}`;
  return { problem, starter_code: '', tests: JSON.stringify(tests), metadata: '{}' };
}

const fence = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

async function transcript(task: CodeTask, attempts: string[], renderer: ToolDeclaringRenderer, opts: Pick<CodeEnvOptions, 'runner' | 'timeout'>): Promise<Message[]> {
  const check = checkSolutionTool(task, opts);
  const tools = new Map<string, Tool>([[check.name, check]]);
  const messages: Message[] = [...renderer.createConversationPrefixWithTools([check.toSpec()]), { role: 'user', content: task.problem }];
  let passed = false;
  for (const code of attempts) {
    const call: ToolCall = { type: 'function', function: { name: check.name, arguments: JSON.stringify({ code }) } };
    const { messages: results } = await handleToolCall(tools, call);
    if (results.length !== 1 || results[0].role !== 'tool') throw new Error(`check_solution answered ${JSON.stringify(results)}`);
    messages.push({ role: 'assistant', content: '', tool_calls: [call] }, results[0]);
    passed = JSON.parse(results[0].content as string).passed;
  }
  if (!passed) throw new Error(`the reference solution fails its own tests:\n${task.problem}\n${attempts.at(-1)}\n${messages.at(-1)!.content}`);
  return [...messages, { role: 'assistant', content: fence(attempts.at(-1)!) }];
}

async function main(): Promise<void> {
  const renderer = toolDeclaring(getRenderer('qwen3', await getTokenizer('tiny-qwen3')), 'code_rl');
  // The tool's options as configs/pipeline_code_tool.json sets them.
  const opts = { runner: new LocalSandbox(), timeout: 2 };
  const rng = new PythonRandom(SEED);
  const rows = families().map((f) => ({ f, row: problemRow(f, rng) }));
  const problems: string[] = [];
  const transcripts: string[] = [];
  for (const [i, { f, row }] of rows.entries()) {
    problems.push(JSON.stringify(row));
    if (PROBLEMS_ONLY) continue;
    const task = codeTaskFromRow(row, `problem ${i + 1}`)!;
    const attempts = i % BUGGY_EVERY === BUGGY_EVERY - 1 ? [f.bug, f.solution] : [f.solution];
    transcripts.push(JSON.stringify({ messages: await transcript(task, attempts, renderer, opts) }));
  }
  mkdirSync(OUT, { recursive: true });
  writeFileSync(path.join(OUT, PROBLEMS_FILE), problems.join('\n') + '\n');
  const shown = (f: string) => path.relative(process.cwd(), path.join(OUT, f)) || f;
  if (PROBLEMS_ONLY) return console.log(`${problems.length} problems in ${shown(PROBLEMS_FILE)}`);
  writeFileSync(path.join(OUT, SFT_FILE), transcripts.join('\n') + '\n');
  console.log(`${problems.length} problems in ${shown(PROBLEMS_FILE)}; ${transcripts.length} transcripts (${Math.floor(rows.length / BUGGY_EVERY)} with a failing first check) in ${shown(SFT_FILE)}`);
}

await main();
