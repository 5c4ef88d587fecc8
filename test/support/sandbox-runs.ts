// The processes of this test process's own local-sandbox runs, told from other test files' runs on
// the same host by the run id in their environment (COOKBOOK_SANDBOX_RUN=<our pid>-<n>).
import { readdirSync, readFileSync } from 'node:fs';

export interface SandboxProcess {
  pid: number;
  /** The run it belongs to (COOKBOOK_SANDBOX_RUN). */
  runId: string;
  cmdline: string;
}

export function ownSandboxProcesses(owner = process.pid): SandboxProcess[] {
  const found: SandboxProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const marker = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').find((v) => v.startsWith(`COOKBOOK_SANDBOX_RUN=${owner}-`));
      if (!marker) continue;
      found.push({ pid: Number(entry), runId: marker.slice('COOKBOOK_SANDBOX_RUN='.length), cmdline: readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim()});
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
