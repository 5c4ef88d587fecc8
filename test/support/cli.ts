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
  return cookbookLive(stack, args, env).done;
}

/** A command left running (`watch`, `train --wait`): its output so far, and a wait for a line of it. */
export function cookbookLive(stack: TestStack, args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [cookbookBin, ...args, '--address', stack.temporalAddress, '--engine-url', stack.engine.baseUrl, '--task-queue', stack.taskQueue], {
    cwd: stack.dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TINKER_API_KEY: 'tml-test', ...env },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const done = new Promise<CliResult>((resolve) => child.on('exit', (code) => resolve({ code: code ?? 1, out, err })));
  return {
    done,
    out: () => out,
    async until(pattern: RegExp, timeoutMs = 120_000): Promise<void> {
      for (const deadline = Date.now() + timeoutMs; !pattern.test(out); await new Promise((r) => setTimeout(r, 100))) {
        if (child.exitCode !== null) throw new Error(`\`cookbook ${args.join(' ')}\` exited (${child.exitCode}) before printing ${pattern}:\n${out}\n${err}`);
        if (Date.now() > deadline) throw new Error(`\`cookbook ${args.join(' ')}\` printed no ${pattern} in ${timeoutMs / 1000} s:\n${out}\n${err}`);
      }
    },
    kill: () => child.kill('SIGKILL'),
  };
}
