// Resident memory of a process and its descendants (Linux /proc), sampled over time: what the load
// and soak commands report for the worker and the engine.

import { readdirSync, readFileSync } from 'node:fs';

function children(): Map<number, number[]> {
  const byParent = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      // `pid (comm) state ppid …`; comm may hold spaces, so split after its closing parenthesis.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      byParent.set(ppid, [...(byParent.get(ppid) ?? []), pid]);
    } catch {
      // the process ended meanwhile
    }
  }
  return byParent;
}

function rssKb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** RSS in MiB of `pid` and every process below it. */
export function treeRssMiB(pid: number): number {
  const byParent = children();
  let total = 0;
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop()!;
    total += rssKb(p);
    stack.push(...(byParent.get(p) ?? []));
  }
  return total / 1024;
}

/** Samples named process trees every `everyMs`; `peak()` and `samples` report them. */
export class MemorySampler {
  readonly samples: Array<{ tS: number } & Record<string, number>> = [];
  private readonly timer: NodeJS.Timeout;
  private readonly t0 = Date.now();

  constructor(
    private readonly pids: () => Record<string, number | undefined>,
    everyMs = 1000,
  ) {
    this.timer = setInterval(() => this.sample(), everyMs);
    this.sample();
  }

  sample(): void {
    const row: { tS: number } & Record<string, number> = { tS: (Date.now() - this.t0) / 1000 };
    for (const [name, pid] of Object.entries(this.pids())) if (pid) row[name] = treeRssMiB(pid);
    this.samples.push(row);
  }

  peak(name: string): number {
    return Math.max(0, ...this.samples.map((s) => s[name] ?? 0));
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }
}
