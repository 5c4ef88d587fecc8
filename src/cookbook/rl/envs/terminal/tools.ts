// The terminal agent's bash tool and the reward its task's tests give (reference 0.6.1
// recipes/harbor_rl/harbor_tools.py: HarborBashTool, HarborReward), on any SandboxInterface.
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { z } from 'zod';
import { PyFloat, pyJsonDumps } from '../../../pyjson.js';
import { compareCodePoints, isPyJsonObject, pyJsonLoads, type PyJsonValue } from '../../../renderers/py-json.js';
import { PY_WHITESPACE, isPyBlank, pyStripWs } from '../../../renderers/py-whitespace.js';
import type { Message } from '../../../renderers/types.js';
import type { SandboxInterface } from '../../../sandbox/types.js';
import { simpleToolResult, tool, type RewardResult, type Tool } from '../../../tool-use/index.js';
import { readText } from './tasks.js';

export const MAX_OUTPUT_CHARS = 16384;

/** Python's s[:n]: the first n code points. */
function firstChars(s: string, n: number): string {
  if (s.length <= n) return s;
  let out = '';
  let count = 0;
  for (const ch of s) {
    if (count++ === n) break;
    out += ch;
  }
  return out;
}

/** The reference's HarborBashTool.bash: the command in the sandbox at /, its exit code and outputs as JSON. */
export function bashTool(sandbox: SandboxInterface, commandTimeout = 120): Tool {
  return tool({
    name: 'bash',
    // Python's __doc__ of the reference's method, indentation included, so the model sees the same declaration.
    description: 'Execute a bash command in the sandbox environment.\n\n        Use this to run shell commands, install packages, edit files, etc.\n        ',
    parameters: z.object({ command: z.string().describe('The bash command to execute.') }),
    run: async ({ command }) => {
      const result = await sandbox.runCommand(command, { workdir: '/', timeout: commandTimeout, maxOutputBytes: MAX_OUTPUT_CHARS });
      const output = pyJsonDumps({ exit_code: result.exitCode, stdout: firstChars(result.stdout, MAX_OUTPUT_CHARS), stderr: firstChars(result.stderr, MAX_OUTPUT_CHARS) });
      return simpleToolResult(output);
    },
  });
}

/**
 * The files under `dir` in the order the reference's `tests_dir.rglob("*")` yields them: a folder's
 * own files, then each subfolder's (depth first), symlinked folders not entered, only regular files
 * (symlinks to them included). Python lists a folder in the filesystem's order; this takes name
 * order. A missing `dir` has no files, as Path.glob says.
 */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    const subdirs: string[] = [];
    for (const name of readdirSync(d).sort(compareCodePoints)) {
      const path = join(d, name);
      const stat = statSync(path, { throwIfNoEntry: false }); // a dangling link is no file
      if (stat?.isFile()) out.push(relative(dir, path));
      else if (stat?.isDirectory() && !lstatSync(path).isSymbolicLink()) subdirs.push(path);
    }
    for (const sub of subdirs) walk(sub);
  };
  if (statSync(dir, { throwIfNoEntry: false })?.isDirectory()) walk(dir);
  return out;
}

/** Python's PurePath.suffix. */
function pySuffix(path: string): string {
  const name = basename(path);
  const dot = name.lastIndexOf('.');
  return dot > 0 && dot < name.length - 1 ? name.slice(dot) : '';
}

const PY_WS = new Set(PY_WHITESPACE);
const ND_DIGIT = /^\p{Nd}$/u;

/** A Unicode decimal digit's value (Python's Py_UNICODE_TODECIMAL): its place in its run of ten; null for other characters. */
function decimalValue(ch: string): number | null {
  if (!ND_DIGIT.test(ch)) return null;
  let cp = ch.codePointAt(0)!;
  let place = 0;
  while (ND_DIGIT.test(String.fromCodePoint(cp - 1))) cp--, place++;
  return place % 10;
}

/**
 * Python's float(s) of a str: non-ASCII digits and spaces read as ASCII ones, surrounding ASCII
 * whitespace dropped, underscores only between digits, inf/infinity/nan in any case; overflow is
 * ±inf. Throws ValueError's message where Python raises.
 */
function pyFloatOfStr(s: string): number {
  const refuse = (): never => {
    throw new Error(`could not convert string to float: ${JSON.stringify(s)}`);
  };
  let ascii = '';
  for (const ch of s) {
    if (ch.codePointAt(0)! < 127) ascii += ch;
    else if (PY_WS.has(ch)) ascii += ' ';
    else ascii += decimalValue(ch) ?? refuse();
  }
  if (/(^|[^0-9])_|_([^0-9]|$)/.test(ascii)) refuse();
  const t = ascii.replace(/_/g, '').replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, '');
  if (/^[+-]?(inf|infinity)$/i.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
  if (/^[+-]?nan$/i.test(t)) return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) refuse();
  return Number(t);
}

/** Python's float(x) of a decoded JSON value. */
function pyFloatOfJson(x: PyJsonValue): number {
  if (x instanceof PyFloat) return x.value;
  if (typeof x === 'boolean') return x ? 1.0 : 0.0;
  if (typeof x === 'string') return pyFloatOfStr(x);
  if (typeof x === 'bigint') {
    const n = Number(x);
    if (!Number.isFinite(n)) throw new Error('int too large to convert to float');
    return n;
  }
  throw new Error(`float() argument must be a string or a real number, not ${x === null ? "'NoneType'" : Array.isArray(x) ? "'list'" : "'dict'"}`);
}

export interface HarborRewardOptions {
  testsDir: string;
  sandbox: SandboxInterface;
  graderTimeout?: number;
  /** Where the grader's outcome goes besides the metrics (the report shows test verdicts). */
  onVerdict?(verdict: TestVerdict): void;
}

export interface TestVerdict {
  reward: number;
  exitCode: number | null;
  /** The tail of test.sh's output. */
  output: string;
  error: string | null;
}

/**
 * The reference's HarborReward: the task's tests/ uploaded to /tests, `bash /tests/test.sh` run
 * from /root, the reward read from /logs/verifier/reward.txt, else reward.json's "reward", else 0.
 * A grading failure is reward 0 with grading_error 1, never an exception.
 */
export function harborReward(opts: HarborRewardOptions): (history: Message[]) => Promise<RewardResult> {
  const { sandbox, testsDir } = opts;
  const graderTimeout = opts.graderTimeout ?? 60;
  return async () => {
    let exitCode: number | null = null;
    let output = '';
    try {
      await sandbox.runCommand('mkdir -p /tests', { workdir: '/' });
      for (const file of filesUnder(testsDir)) {
        await sandbox.writeFile(`/tests/${file}`, readText(join(testsDir, file)), { executable: pySuffix(file) === '.sh' });
      }
      // From /root, not /: test.sh checks whether PWD is / and exits early.
      await sandbox.runCommand('mkdir -p /logs/verifier', { workdir: '/root' });
      const run = await sandbox.runCommand('bash /tests/test.sh', { workdir: '/root', timeout: graderTimeout });
      exitCode = run.exitCode;
      output = `${run.stdout}${run.stderr}`.slice(-2000);
      const reward = await parseReward(sandbox);
      opts.onVerdict?.({ reward, exitCode, output, error: null });
      return [reward, { reward, test_passed: reward > 0 ? 1.0 : 0.0 }];
    } catch (e) {
      opts.onVerdict?.({ reward: 0, exitCode, output, error: (e as Error).message });
      return [0.0, { reward: 0.0, test_passed: 0.0, grading_error: 1.0 }];
    }
  };
}

/** reward.txt's number, else reward.json's "reward" (0 when the key is absent), else 0; Python's float() and json.loads throughout. */
async function parseReward(sandbox: SandboxInterface): Promise<number> {
  const txt = await sandbox.readFile('/logs/verifier/reward.txt');
  if (txt.exitCode === 0 && !isPyBlank(txt.stdout)) return pyFloatOfStr(pyStripWs(txt.stdout));
  const json = await sandbox.readFile('/logs/verifier/reward.json');
  if (json.exitCode === 0 && !isPyBlank(json.stdout)) {
    const data = pyJsonLoads(json.stdout);
    // Python's data.get(...): only a dict has it.
    if (!isPyJsonObject(data)) throw new Error(`reward.json holds no object, so it has no 'reward'`);
    return data.has('reward') ? pyFloatOfJson(data.get('reward')!) : 0.0;
  }
  return 0.0;
}
