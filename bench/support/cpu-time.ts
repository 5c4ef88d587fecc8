// CPU seconds spent by groups of this process's descendants over a bench arm (Linux /proc), sampled
// every 200 ms so that processes which exit during the arm (the reference's Python driver) still
// count, short of their last 500 ms at most. On a 2-core machine every CPU second a loop's own processes
// spend while the engine computes is taken from the engine's threads: this is what the bench's
// wall-clock cannot show apart from the load other processes put on the machine.
import { readdirSync, readFileSync } from 'node:fs';

const TICK = 100; // USER_HZ on Linux

interface ProcStat {
  ppid: number;
  /** utime + stime, seconds. */
  cpu: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), cpu: (Number(fields[11]) + Number(fields[12])) / TICK };
  } catch {
    return undefined; // exited meanwhile
  }
}

function snapshot(): Map<number, ProcStat> {
  const all = new Map<number, ProcStat>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const s = readStat(pid);
    if (s) all.set(pid, s);
  }
  return all;
}

export interface CpuMeter {
  /** CPU seconds per group since start: each group is the process trees under its root pids; `rest` is every other descendant of this process; `self` is this process. */
  stop(): Record<string, number>;
}

/** Starts sampling; groups name root pids (a group's trees are read at every sample, so restarted children are found). */
export function startCpuMeter(groups: () => Record<string, Array<number | undefined>>): CpuMeter {
  const selfStart = process.cpuUsage();
  const first = new Map<number, number>(); // pid -> cpu at its first sighting (0 for a process born during the arm)
  const last = new Map<number, { cpu: number; group: string }>();
  let sampled = false;
  const sample = () => {
    const all = snapshot();
    const children = new Map<number, number[]>();
    for (const [pid, s] of all) children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid]);
    const groupOf = new Map<number, string>();
    const walk = (pid: number, group: string) => {
      if (pid === process.pid || groupOf.has(pid)) return;
      groupOf.set(pid, group);
      for (const c of children.get(pid) ?? []) walk(c, group);
    };
    for (const [group, roots] of Object.entries(groups())) for (const r of roots) if (r !== undefined) walk(r, group);
    for (const c of children.get(process.pid) ?? []) walk(c, 'rest');
    for (const [pid, group] of groupOf) {
      const cpu = all.get(pid)!.cpu;
      if (!first.has(pid)) first.set(pid, sampled ? 0 : cpu);
      last.set(pid, { cpu, group });
    }
    sampled = true;
  };
  sample();
  const timer = setInterval(sample, 500);
  return {
    stop() {
      clearInterval(timer);
      sample();
      const out: Record<string, number> = {};
      for (const [pid, { cpu, group }] of last) out[group] = (out[group] ?? 0) + cpu - first.get(pid)!;
      const self = process.cpuUsage(selfStart);
      out.self = (self.user + self.system) / 1e6;
      return out;
    },
  };
}
