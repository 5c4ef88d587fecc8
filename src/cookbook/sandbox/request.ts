// What a run_code request may ask for: limits within the sandbox's own, checked before anything is
// staged, so that a bad value is refused by name (`run_timeout: -5` is no time at all; `1e12`
// seconds would overflow the wall-time timer and kill the run at once) instead of misreported.
import { SandboxRequestError, type RunCodeRequest } from './types.js';

export interface RequestMaxima {
  /** The longest run_timeout or compile_timeout a request may ask for, in seconds. */
  maxTimeoutSeconds: number;
  /** The most memory a request may ask for, in MiB (the sandbox's own per-run limit). */
  maxMemoryMB: number;
}

function checkTimeout(field: 'run_timeout' | 'compile_timeout', value: unknown, max: number): void {
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new SandboxRequestError(`${field} must be a positive number of seconds (got ${JSON.stringify(value)})`);
  }
  if (value > max) throw new SandboxRequestError(`${field} ${value} is over this sandbox's maximum of ${max} seconds`);
}

/** Throws SandboxRequestError naming the first field out of range; SandboxFusion's -1 memory means "the sandbox's own limit". */
export function checkRunRequest(request: RunCodeRequest, maxima: RequestMaxima): void {
  if (typeof request.code !== 'string') throw new SandboxRequestError('code must be a string');
  if (request.language !== undefined && typeof request.language !== 'string') throw new SandboxRequestError(`language must be a string (got ${JSON.stringify(request.language)})`);
  checkTimeout('run_timeout', request.run_timeout, maxima.maxTimeoutSeconds);
  checkTimeout('compile_timeout', request.compile_timeout, maxima.maxTimeoutSeconds);
  const memory = request.memory_limit_MB as unknown;
  if (memory !== undefined && memory !== null && memory !== -1) {
    if (typeof memory !== 'number' || !Number.isInteger(memory) || memory < 1) {
      throw new SandboxRequestError(`memory_limit_MB must be a whole number of MiB ≥ 1, or -1 for the sandbox's own limit (got ${JSON.stringify(memory)})`);
    }
    if (memory > maxima.maxMemoryMB) throw new SandboxRequestError(`memory_limit_MB ${memory} is over this sandbox's per-run limit of ${maxima.maxMemoryMB} MiB`);
  }
  if (request.stdin !== undefined && request.stdin !== null && typeof request.stdin !== 'string') throw new SandboxRequestError('stdin must be a string');
  if (request.files !== undefined && request.files !== null) {
    if (typeof request.files !== 'object' || Array.isArray(request.files)) throw new SandboxRequestError('files must map file names to base64 content');
    for (const [name, content] of Object.entries(request.files)) {
      if (typeof content !== 'string') throw new SandboxRequestError(`files[${JSON.stringify(name)}] must be base64 text`);
    }
  }
}
