// Child processes for the compose test: run to completion (output captured, optionally streamed
// line by line to a log function or file), with a time limit.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';

/**
 * Runs `cmd args…` and resolves with { code, stdout, stderr, ms }; rejects on a non-zero exit
 * unless `allowFail`. `onLine` sees every output line as it comes; `logFile` gets all output.
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ cwd?: string, env?: NodeJS.ProcessEnv, input?: string, timeoutMs?: number, allowFail?: boolean,
 *           onLine?: (line: string) => void, logFile?: string }} [opts]
 */
export function run(cmd, args, opts = {}) {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let partial = '';
    const feed = (chunk) => {
      if (opts.logFile) appendFileSync(opts.logFile, chunk);
      if (!opts.onLine) return;
      const lines = (partial + chunk).split(/\r?\n|\r/);
      partial = lines.pop() ?? '';
      for (const line of lines) opts.onLine(line);
    };
    child.stdout.on('data', (d) => {
      stdout += d;
      feed(d.toString());
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      feed(d.toString());
    });
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          child.kill('SIGKILL');
          stderr += `\n[killed after ${opts.timeoutMs} ms]`;
        }, opts.timeoutMs)
      : undefined;
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${cmd}: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (partial && opts.onLine) opts.onLine(partial);
      const result = { code: code ?? 128, signal, stdout, stderr, ms: Date.now() - started };
      if (result.code !== 0 && !opts.allowFail) {
        const tail = (stderr.trim() || stdout.trim()).split('\n').slice(-40).join('\n');
        reject(Object.assign(new Error(`${cmd} ${args.join(' ')} exited with ${signal ?? code}:\n${tail}`), { result }));
      } else {
        resolve(result);
      }
    });
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a truthy value (returned) or `timeoutMs` passes (throws `what`). */
export async function waitFor(what, probe, { timeoutMs = 120_000, intervalMs = 1000 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}${last ? ` (last error: ${last.message})` : ''}`);
    await sleep(intervalMs);
  }
}

export const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
