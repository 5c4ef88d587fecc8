// The `cookbook` CLI as a user runs it against a test stack: a child process with no TTY, its
// output collected, the stack's Temporal address, engine and task queue passed as flags.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { TestStack } from './stack.js';

export const cookbookBin = join(import.meta.dirname, '..', '..', 'bin', 'cookbook.mjs');

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

export function cookbookOn(stack: TestStack, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cookbookBin, ...args, '--address', stack.temporalAddress, '--engine-url', stack.engine.baseUrl, '--task-queue', stack.taskQueue], {
      cwd: stack.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TINKER_API_KEY: 'tml-test', ...env },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => resolve({ code: code ?? 1, out, err }));
  });
}
