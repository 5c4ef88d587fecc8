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
  return cookbookProcess([...args, '--address', stack.temporalAddress, '--engine-url', stack.engine.baseUrl, '--task-queue', stack.taskQueue], { env, cwd: stack.dir });
}

/**
 * The CLI with these arguments only, as a user runs it, in a child process that leaves this
 * process's event loop free (a spawnSync would stall the test runner's own messages). Done once its
 * output is all read: a process's exit can come before its last output does.
 */
export function cookbookProcess(args: string[], o: { env?: Record<string, string>; cwd?: string } = {}) {
  const child = spawn(process.execPath, [cookbookBin, ...args], { cwd: o.cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TINKER_API_KEY: 'tml-test', ...o.env } });
  let out = '';
  let err = '';
  let closed = false;
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const done = new Promise<CliResult>((resolve) =>
    child.on('close', (code) => {
      closed = true;
      resolve({ code: code ?? 1, out, err });
    }),
  );
  return {
    child,
    done,
    out: () => out,
    err: () => err,
    async until(pattern: RegExp, timeoutMs = 120_000): Promise<void> {
      for (const deadline = Date.now() + timeoutMs; !pattern.test(out); await new Promise((r) => setTimeout(r, 100))) {
        if (closed) throw new Error(`\`cookbook ${args.join(' ')}\` exited (${child.exitCode}) before printing ${pattern}:\n${out}\n${err}`);
        if (Date.now() > deadline) throw new Error(`\`cookbook ${args.join(' ')}\` printed no ${pattern} in ${timeoutMs / 1000} s:\n${out}\n${err}`);
      }
    },
    kill: () => child.kill('SIGKILL'),
  };
}
