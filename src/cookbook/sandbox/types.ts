// Sandboxed code execution (reference 0.6.1 sandbox/): the SandboxFusion `run_code` request and
// response (https://bytedance.github.io/SandboxFusion/, what the reference's client sends and
// reads), the runner interface both backends here implement, and the reference's
// SandboxInterface/SandboxResult names for stateful sandboxes.
import { CookbookError, ServiceUnavailableError } from '../errors.js';

/** POST /run_code body. `files` maps a relative path to its base64 content. */
export interface RunCodeRequest {
  code: string;
  language: string;
  run_timeout?: number;
  compile_timeout?: number;
  memory_limit_MB?: number;
  stdin?: string;
  files?: Record<string, string>;
  fetch_files?: string[];
}

export type CommandRunStatus = 'Finished' | 'Error' | 'TimeLimitExceeded';
export type RunStatus = 'Success' | 'Failed' | 'SandboxError';

export interface CommandRunResult {
  status: CommandRunStatus;
  execution_time: number | null;
  return_code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunCodeResponse {
  status: RunStatus;
  /** Why a run failed or what limit stopped it; empty on success. */
  message: string;
  compile_result: CommandRunResult | null;
  run_result: CommandRunResult | null;
  executor_pod_name?: string | null;
  files: Record<string, string>;
}

/**
 * What code graders call (the reference's SandboxFusionClient.run): the code, supporting files
 * (text), a timeout in seconds; answers whether it ran successfully and the full response, or
 * `{error}` when the sandbox could not be asked. Never throws for a failed run.
 */
export interface CodeRunner {
  run(code: string, files: Record<string, string>, timeout: number, language?: string): Promise<[boolean, RunCodeResponse | ({ error: string } & Partial<RunCodeResponse>)]>;
  close(): Promise<void>;
}

/** The reference's SandboxResult. */
export interface SandboxResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  metrics: Record<string, unknown>;
}

/** The reference's SandboxInterface: a long-lived sandbox commands and files go into. */
export interface SandboxInterface {
  readonly sandboxId: string;
  sendHeartbeat(timeout?: number): Promise<void>;
  runCommand(command: string, opts?: { workdir?: string | null; timeout?: number; maxOutputBytes?: number | null }): Promise<SandboxResult>;
  readFile(path: string, opts?: { maxBytes?: number | null; timeout?: number }): Promise<SandboxResult>;
  writeFile(path: string, content: string | Uint8Array, opts?: { executable?: boolean; timeout?: number }): Promise<SandboxResult>;
  cleanup(): Promise<void>;
}

export class SandboxError extends CookbookError {}
/** A sandbox was terminated or died unexpectedly. */
export class SandboxTerminatedError extends SandboxError {}
/** A request the sandbox will not run as sent (a limit out of range, a missing field); the message names the field. */
export class SandboxRequestError extends SandboxError {}
/** The sandbox's queue is full: the request was not run, and may be sent again later. */
export class SandboxBusyError extends SandboxError {}
/** This host cannot isolate code; the message names what is missing. */
export class SandboxUnavailableError extends SandboxError {}
/** The sandbox server did not answer (refused or dropped connections, 502/503/504) for the client's whole retry window. */
export class SandboxUnreachableError extends ServiceUnavailableError {}

export const SandboxBackend = { SANDBOXFUSION: 'sandboxfusion', LOCAL: 'local' } as const;
export type SandboxBackend = (typeof SandboxBackend)[keyof typeof SandboxBackend];
