// The local sandbox's run_code server as a process of its own, for tests that kill it: every
// program it ran to the end is a line of `--run-log` (written before the answer goes out), and
// `--status` holds what it is doing now ({executed, running, held}, replaced atomically). With
// `--hold-after N`, requests past the N-th wait unrun until the process dies, so a test can kill it
// while no program runs (a kill between a run and its answer would make that run happen twice,
// which no client can prevent).
//   node --import tsx test/support/sandbox-server-main.ts --port P --run-log F --status F [--hold-after N]
import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import { LocalSandbox } from '../../src/cookbook/sandbox/local.js';
import { startSandboxServer } from '../../src/cookbook/sandbox/server.js';
import type { RunCodeRequest, RunCodeResponse } from '../../src/cookbook/sandbox/types.js';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const runLog = arg('--run-log')!;
const statusFile = arg('--status')!;
const holdAfter = arg('--hold-after') === undefined ? null : Number(arg('--hold-after'));

class LoggedSandbox extends LocalSandbox {
  executed = 0;
  running = 0;
  held = 0;
  writeStatus(): void {
    const tmp = `${statusFile}.tmp`;
    writeFileSync(tmp, JSON.stringify({ pid: process.pid, executed: this.executed, running: this.running, held: this.held }));
    renameSync(tmp, statusFile);
  }
  override async runCode(request: RunCodeRequest): Promise<RunCodeResponse> {
    if (holdAfter !== null && this.executed + this.running >= holdAfter) {
      this.held++;
      this.writeStatus();
      return new Promise<never>(() => {});
    }
    this.running++;
    this.writeStatus();
    try {
      const response = await super.runCode(request);
      appendFileSync(runLog, `${JSON.stringify({ pid: process.pid, status: response.status })}\n`);
      this.executed++;
      return response;
    } finally {
      this.running--;
      this.writeStatus();
    }
  }
}

const sandbox = new LoggedSandbox();
sandbox.writeStatus();
startSandboxServer({ port: Number(arg('--port')), sandbox }).then(
  (s) => console.log(`sandbox listening: SANDBOX_URL=${s.url}`),
  (e: Error) => {
    console.error(e.message);
    process.exit(1);
  },
);
