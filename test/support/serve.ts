// `cookbook serve` as a user runs it: the CLI in its own process, against a given backend.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { engineForFile } from './engine.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'cookbook.mjs');

/** Starts `cookbook serve <args>` on `engineUrl`, resolving to the process and the base URL it prints. */
export function startServe(engineUrl: string, args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { env: { ...process.env, TINKER_BASE_URL: engineUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /OpenAI base URL (\S+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => reject(new Error(`cookbook serve exited (${code}) before serving:\n${out}\n${err}`)));
  });
}

/** Stops a served process with SIGTERM and waits for it to exit. */
export async function stopServe(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** This worker process's engine of the shared stack when the run has one, else an engine of this file's own (stop it after). */
export async function serveBackend(): Promise<{ engineUrl: string; stop: () => Promise<void> }> {
  const engine = await engineForFile();
  return { engineUrl: engine.baseUrl, stop: () => engine.stop() };
}
