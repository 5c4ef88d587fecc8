// An episode's sandbox whose every operation — the agent's commands, the grader's uploads, its
// test run, its reads — happens once (DESIGN §3.9). Each is recorded at its logical position in
// the episode (op 0, 1, …) with its result and the root's files after it (a snapshot, when they
// changed). A rollout retried after a crash replays the records without running anything, and the
// first operation without a record starts a sandbox from the last recorded snapshot: the files as
// the last recorded command left them, whatever the killed attempt did after that.
//
// A record holds only when it was made from the same state: each request names the operation and
// a hash of the files it ran on, so a path that went another way (a sampler that is not
// deterministic) is run, not answered from a record of another history.
//
// The sandbox's lifetime is counted in command time (the recorded seconds), not the clock, so a
// replayed episode ends where the first one did: past `lifetimeSeconds` of commands the sandbox is
// terminated, as Modal's is past its timeout.
import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import type { Once } from '../../side-effects.js';
import { SandboxTerminatedError, type SandboxInterface, type SandboxResult } from '../../../sandbox/types.js';
import type { SnapshotSandbox } from './backend.js';

interface OpRecord {
  result: SandboxResult;
  /** The root's files after the operation (base64 of a gzipped tar), or null when they did not change. */
  snapshot: string | null;
}

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex').slice(0, 24);

export interface DurableSandboxOptions {
  once: Once;
  episode: number;
  /** The starting files (the task's image). */
  image: Buffer;
  /** A live sandbox holding `files`. */
  open(files: Buffer): Promise<SnapshotSandbox>;
  /** Seconds of commands after which the sandbox is gone (the reference's sandbox_timeout). */
  lifetimeSeconds: number;
  /**
   * Where each operation that really ran is logged, one JSON line naming the record it makes
   * (default: COOKBOOK_SANDBOX_EXEC_LOG; null: nowhere) — an audit of what ran, against the records.
   */
  execLog?: string | null;
}

export class DurableSandbox implements SandboxInterface {
  readonly sandboxId: string;
  private live: SnapshotSandbox | null = null;
  private files: Buffer;
  private filesHash: string;
  private op = 0;
  private secondsUsed = 0;
  private closed = false;
  /** Operations run here (not replayed from a record). */
  executed = 0;

  constructor(private readonly opts: DurableSandboxOptions) {
    this.sandboxId = `episode_${opts.episode}`;
    this.files = opts.image;
    this.filesHash = sha(opts.image);
  }

  async sendHeartbeat(): Promise<void> {
    this.alive();
  }

  runCommand(command: string, opts: { workdir?: string | null; timeout?: number; maxOutputBytes?: number | null } = {}): Promise<SandboxResult> {
    return this.act(`run_command ${JSON.stringify([command, opts.workdir ?? null, opts.timeout ?? 60, opts.maxOutputBytes ?? null])}`, (sb) => sb.runCommand(command, opts));
  }

  readFile(path: string, opts: { maxBytes?: number | null; timeout?: number } = {}): Promise<SandboxResult> {
    return this.act(`read_file ${JSON.stringify([path, opts.maxBytes ?? null, opts.timeout ?? 60])}`, (sb) => sb.readFile(path, opts));
  }

  writeFile(path: string, content: string | Uint8Array, opts: { executable?: boolean; timeout?: number } = {}): Promise<SandboxResult> {
    const digest = sha(typeof content === 'string' ? content : Buffer.from(content));
    return this.act(`write_file ${JSON.stringify([path, digest, opts.executable ?? false, opts.timeout ?? 60])}`, (sb) => sb.writeFile(path, content, opts));
  }

  private alive(): void {
    if (this.closed) throw new SandboxTerminatedError(`sandbox ${this.sandboxId} was cleaned up`);
    if (this.secondsUsed >= this.opts.lifetimeSeconds) throw new SandboxTerminatedError(`sandbox ${this.sandboxId} terminated: its lifetime of ${this.opts.lifetimeSeconds} s of commands is spent`);
  }

  private async act(request: string, run: (sb: SnapshotSandbox) => Promise<SandboxResult>): Promise<SandboxResult> {
    this.alive();
    const key = ['sandbox', `episode_${this.opts.episode}`, `op_${this.op++}`];
    let acted = false;
    const record = await this.opts.once<OpRecord>(key, `${request} on ${this.filesHash}`, async () => {
      acted = true;
      this.live ??= await this.opts.open(this.files);
      const result = await run(this.live);
      this.executed++;
      const log = this.opts.execLog === undefined ? process.env.COOKBOOK_SANDBOX_EXEC_LOG : this.opts.execLog;
      if (log) appendFileSync(log, JSON.stringify({ record: `${this.opts.once.position ?? '-'}/${key.join('_')}.json`, request, pid: process.pid, exit_code: result.exitCode }) + '\n');
      const after = await this.live.snapshot();
      return { result, snapshot: after.equals(this.files) ? null : after.toString('base64') };
    });
    if (record.snapshot !== null) {
      this.files = Buffer.from(record.snapshot, 'base64');
      this.filesHash = sha(this.files);
      // A record of another attempt, made from these same files, changed them: a live sandbox no
      // longer holds them, and the next operation that runs opens one from the record's.
      if (!acted && this.live) {
        await this.live.cleanup();
        this.live = null;
      }
    }
    this.secondsUsed += Number(record.result.metrics?.seconds ?? 0);
    return record.result;
  }

  async cleanup(): Promise<void> {
    this.closed = true;
    await this.live?.cleanup();
    this.live = null;
  }
}
