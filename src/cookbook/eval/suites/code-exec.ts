// What the reference's code benchmarks (eval/benchmarks/mbpp.py, _livecodebench.py) share: the
// Python code of a response (_common.py extract_python_code) and a program's run in the sandbox
// code RL uses (the local one, or SandboxFusion when SANDBOX_URL is set), each run recorded through
// the grade's `once` so a retried chunk reads its verdict back instead of running it again.
import { createHash } from 'node:crypto';
import { PY_WS_CLASS, pyStripWs } from '../../renderers/py-whitespace.js';
import { codeRunner } from '../../sandbox/shared-runner.js';
import { SandboxError, type CodeRunner, type RunCodeResponse } from '../../sandbox/types.js';

const WS = `[${PY_WS_CLASS}]`;
const PYTHON_BLOCK = new RegExp(`\`\`\`python${WS}*\\n([\\s\\S]*?)\\n\`\`\``);
// Python's `\w` (str patterns) is a letter, a number or "_".
const ANY_BLOCK = new RegExp(`\`\`\`(?:[\\p{L}\\p{N}_]*)${WS}*\\n([\\s\\S]*?)\\n\`\`\``, 'gu');

/** The first ```python block, else the last fenced block of any language, else the whole text; stripped. */
export function extractPythonCode(text: string): string {
  const python = PYTHON_BLOCK.exec(text);
  if (python) return pyStripWs(python[1]);
  const blocks = [...text.matchAll(ANY_BLOCK)];
  if (blocks.length) return pyStripWs(blocks[blocks.length - 1][1]);
  return pyStripWs(text);
}

/** What a grade keeps of one sandbox run (its record in the eval run's store). */
export interface RunVerdict {
  passed: boolean;
  /** The run's status and exit code, for reading a failure in the record. */
  status: string;
  exitCode: number | null;
}

export const sha256 = (...parts: string[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(`${Buffer.byteLength(p)}:`).update(p);
  return h.digest('hex');
};

/** Where a suite's programs run: injected in tests, else the process's shared runner (chosen on first use). */
export type RunnerSource = () => CodeRunner;
export const sharedRunner: RunnerSource = () => codeRunner(null);

/**
 * Runs `code` (with `files` beside it) and answers its response. A sandbox that could not run the
 * code at all (host cannot isolate, sandbox error) throws: that is no verdict on the program, and
 * scoring it 0 would report a broken sandbox as a weak model (the reference fails the benchmark
 * when it has no sandbox). A program that fails, times out or passes a limit is an answer.
 */
export async function runProgram(runner: CodeRunner, code: string, files: Record<string, string>, timeoutSeconds: number): Promise<RunCodeResponse | { error: string }> {
  const [, response] = await runner.run(code, files, timeoutSeconds);
  if ('status' in response && response.status === 'SandboxError') throw new SandboxError(`the sandbox could not run the program: ${response.message || (response as { error?: string }).error || 'SandboxError'}`);
  return response as RunCodeResponse | { error: string };
}

/** Exit status 0 (the run finished, not stopped at a limit). */
export function exitedZero(response: RunCodeResponse | { error: string }): boolean {
  return 'run_result' in response && response.status === 'Success' && response.run_result?.return_code === 0;
}

export function verdictOf(response: RunCodeResponse | { error: string }, passed: boolean): RunVerdict {
  if (!('run_result' in response)) return { passed, status: `error: ${response.error}`, exitCode: null };
  return { passed, status: response.run_result?.status ?? response.status, exitCode: response.run_result?.return_code ?? null };
}
