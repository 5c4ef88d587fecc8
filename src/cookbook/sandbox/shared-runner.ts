// The process's code runners, one per backend (as the reference's module-level clients): code RL
// and the code benchmarks of `cookbook eval` share them, and so share the local sandbox's queue.
import { LocalSandbox } from './local.js';
import { SandboxFusionClient } from './sandboxfusion.js';
import { SandboxBackend, type CodeRunner } from './types.js';

const runners = new Map<string, CodeRunner>();

/** `backend` null: SandboxFusion when SANDBOX_URL is set, else the local sandbox. */
export function codeRunner(backend: SandboxBackend | null): CodeRunner {
  const chosen = backend ?? (process.env.SANDBOX_URL ? SandboxBackend.SANDBOXFUSION : SandboxBackend.LOCAL);
  const key = chosen === SandboxBackend.SANDBOXFUSION ? `${chosen} ${process.env.SANDBOX_URL ?? ''}` : chosen;
  if (!runners.has(key)) runners.set(key, chosen === SandboxBackend.SANDBOXFUSION ? new SandboxFusionClient() : new LocalSandbox());
  return runners.get(key)!;
}
