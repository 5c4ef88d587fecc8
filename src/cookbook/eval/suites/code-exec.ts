// What the reference's code benchmarks (eval/benchmarks/mbpp.py, _livecodebench.py) share: the
// Python code of a response (_common.py extract_python_code) and a program's run in the sandbox
// code RL uses (the local one, or SandboxFusion when SANDBOX_URL is set), each run recorded through
// the grade's `once` so a retried chunk reads its verdict back instead of running it again.
import { createHash } from 'node:crypto';
import { PY_WS_CLASS, pyStripWs } from '../../renderers/py-whitespace.js';
import { codeRunner } from '../../sandbox/shared-runner.js';
import { SandboxError, type CodeRunner } from '../../sandbox/types.js';

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
 * Runs `code` (with `files` beside it): passed when it exits 0 (not stopped at a limit) and
 * `stdoutOk` accepts its output. A sandbox that could not run the code at all (a host that cannot
 * isolate, a refused request) throws: that is no verdict on the program, and scoring it 0 would
 * report a broken sandbox as a weak model (the reference fails the benchmark without a sandbox).
 */
export async function runVerdict(runner: CodeRunner, code: string, files: Record<string, string>, timeoutSeconds: number, stdoutOk: (stdout: string) => boolean = () => true): Promise<RunVerdict> {
  const [, response] = await runner.run(code, files, timeoutSeconds);
  const error = 'error' in response ? response.error : undefined;
  if (response.status === 'SandboxError') throw new SandboxError(`the sandbox could not run the program: ${response.message || error || 'SandboxError'}`);
  // No response at all (SandboxFusion's HTTP error, a request past its time): a failed run, as the reference counts one.
  if (!response.run_result) return { passed: false, status: `error: ${error ?? response.message ?? 'no response'}`, exitCode: null };
  const run = response.run_result;
  const passed = response.status === 'Success' && run.return_code === 0 && stdoutOk(run.stdout);
  return { passed, status: run.status, exitCode: run.return_code };
}
