// The terminal agent's bash tool and the reward its task's tests give (reference 0.6.1
// recipes/harbor_rl/harbor_tools.py: HarborBashTool, HarborReward), on any SandboxInterface.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import { z } from 'zod';
import { pyJsonDumps } from '../../../pyjson.js';
import type { Message } from '../../../renderers/types.js';
import type { SandboxInterface } from '../../../sandbox/types.js';
import { simpleToolResult, tool, type RewardResult, type Tool } from '../../../tool-use/index.js';

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

/** Every file under `dir`, relative paths, in a stable order (the reference walks with rglob). */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else out.push(relative(dir, path));
    }
  };
  walk(dir);
  return out;
}

/** Python's float() of a reward file's text; NaN when it is not a number. */
function pyFloat(text: string): number {
  const t = text.trim().toLowerCase().replace(/_/g, '');
  if (/^[+-]?(inf|infinity)$/.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
  if (/^[+-]?nan$/.test(t)) return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) throw new Error(`could not convert string to float: '${text.trim()}'`);
  return Number(t);
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
        const content = readFileSync(join(testsDir, file), 'utf8');
        await sandbox.writeFile(`/tests/${file}`, content, { executable: extname(file) === '.sh' });
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

async function parseReward(sandbox: SandboxInterface): Promise<number> {
  const txt = await sandbox.readFile('/logs/verifier/reward.txt');
  if (txt.exitCode === 0 && txt.stdout.trim()) return pyFloat(txt.stdout);
  const json = await sandbox.readFile('/logs/verifier/reward.json');
  if (json.exitCode === 0 && json.stdout.trim()) {
    const data = JSON.parse(json.stdout) as Record<string, unknown>;
    const r = data.reward ?? 0.0;
    return typeof r === 'number' ? r : pyFloat(String(r));
  }
  return 0.0;
}
