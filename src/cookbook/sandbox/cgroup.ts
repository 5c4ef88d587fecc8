// A control group per sandbox run, so that a run's processes are held *together* to its memory,
// process and CPU limits: rlimits bound each process alone, and eight children of 700 MiB each pass
// a 1 GiB address-space limit one by one. cgroup v2 (memory.max, pids.max, cpu.max) where the
// controllers are on the unified hierarchy; cgroup v1's memory, pids, cpu and cpuacct hierarchies
// where they are mounted there instead (as on hosts and containers still on v1 or hybrid).
//
// Each run's group is created under the caller's own group (what delegation hands out), joined by
// the run's first process before it execs anything (cgroupJoinArgv), watched while it runs (a
// limit hit is a counter in the group's files), and removed once its last process is gone.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type CgroupLimit = 'memory' | 'processes' | 'cpu time';

/** The folder under the caller's own group that holds each run's group. */
export const CGROUP_PARENT = 'cookbook-sandbox';

export interface CgroupLimits {
  memoryBytes: number;
  /** Tasks in the group at once (threads count, as the pids controller counts them). */
  maxTasks: number;
  /** Cores the run may keep busy at once. */
  cpus: number;
  /** CPU seconds of all the run's processes together. */
  cpuSeconds: number;
}

export interface CgroupUsage {
  cpuSeconds: number;
  /** The most memory the run held at once (bytes), where the kernel keeps it. */
  memoryPeakBytes: number | null;
  /** The most tasks the run had at once, where the kernel keeps it. */
  tasksPeak: number | null;
  oomKills: number;
  forksRefused: number;
}

/** Where each controller's hierarchy has the caller's own group, and which cgroup version it is. */
export interface CgroupLayout {
  version: 1 | 2;
  /** v2: one directory for all; v1: one per controller (cpuacct may share cpu's). */
  dirs: { memory: string; pids: string; cpu: string; cpuacct: string };
}

interface Mount {
  point: string;
  root: string;
  type: string;
  options: string[];
}

function mounts(mountinfo: string): Mount[] {
  const found: Mount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right) continue;
    const fields = left.split(' ');
    const [type, , superOptions] = right.split(' ');
    if (type === 'cgroup' || type === 'cgroup2') found.push({ root: unescape(fields[3]), point: unescape(fields[4]), type, options: (superOptions ?? '').split(',') });
  }
  return found;
}

/** mountinfo writes spaces and such as octal escapes. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** A group path (as /proc/self/cgroup gives it) inside a mount whose root is `root`. */
function within(mount: Mount, path: string): string | null {
  const inside = mount.root === '/' ? path : path === mount.root || path.startsWith(`${mount.root}/`) ? path.slice(mount.root.length) : null;
  return inside === null ? null : join(mount.point, inside).replace(/(.)\/$/, '$1');
}

/**
 * The caller's group in each controller's hierarchy, from /proc/self/mountinfo and /proc/self/cgroup;
 * null with the reason when the controllers are not all there. v1 is used when all four are mounted
 * as v1 hierarchies, else v2 when its root lists memory, pids and cpu.
 */
export function cgroupLayout(mountinfo: string, selfCgroup: string): CgroupLayout | { reason: string } {
  const all = mounts(mountinfo);
  const paths = new Map<string, string>(); // controller (or "" for v2) → path
  for (const line of selfCgroup.trim().split('\n')) {
    const [, controllers, path] = line.match(/^\d+:([^:]*):(.*)$/) ?? [];
    if (path === undefined) continue;
    for (const c of controllers === '' ? [''] : controllers.split(',')) paths.set(c, path);
  }
  const v1 = (controller: string) => {
    const m = all.find((x) => x.type === 'cgroup' && x.options.includes(controller));
    const path = paths.get(controller);
    return m && path !== undefined ? within(m, path) : null;
  };
  const [memory, pids, cpu, cpuacct] = ['memory', 'pids', 'cpu', 'cpuacct'].map(v1);
  if (memory && pids && cpu && cpuacct) return { version: 1, dirs: { memory, pids, cpu, cpuacct } };
  const unified = all.find((m) => m.type === 'cgroup2');
  const path = paths.get('');
  if (!unified || path === undefined) return { reason: 'no cgroup hierarchy has the memory, pids and cpu controllers' };
  const own = within(unified, path);
  if (!own) return { reason: `this process's cgroup (${path}) is outside the mounted cgroup2 tree (${unified.point})` };
  let available = '';
  try {
    available = readFileSync(join(unified.point, 'cgroup.controllers'), 'utf8');
  } catch {
    // read as none below
  }
  const missing = ['memory', 'pids', 'cpu'].filter((c) => !available.split(/\s+/).includes(c));
  if (missing.length) return { reason: `the cgroup2 tree at ${unified.point} lacks the ${missing.join(', ')} controller${missing.length > 1 ? 's' : ''}` };
  return { version: 2, dirs: { memory: own, pids: own, cpu: own, cpuacct: own } };
}

const read = (file: string) => readFileSync(file, 'utf8');

function counter(text: string, key: string): number {
  const m = text.match(new RegExp(`^${key} (\\d+)$`, 'm'));
  return m ? Number(m[1]) : 0;
}

function optional(file: string): number | null {
  try {
    const n = Number(read(file).trim());
    return Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

const CFS_PERIOD_US = 100_000;

/** One run's group (a directory per v1 hierarchy, one on v2), with its limits written. */
export class RunCgroup {
  readonly dirs: string[];
  private readonly d: CgroupLayout['dirs'];

  private constructor(
    readonly layout: CgroupLayout,
    name: string,
    readonly limits: CgroupLimits,
  ) {
    const parent = (dir: string) => join(dir, CGROUP_PARENT);
    this.d = {
      memory: join(parent(layout.dirs.memory), name),
      pids: join(parent(layout.dirs.pids), name),
      cpu: join(parent(layout.dirs.cpu), name),
      cpuacct: join(parent(layout.dirs.cpuacct), name),
    };
    this.dirs = [...new Set(Object.values(this.d))];
  }

  /** Creates the group and writes its limits; throws (having removed what it made) when the kernel refuses. */
  static create(layout: CgroupLayout, name: string, limits: CgroupLimits): RunCgroup {
    const group = new RunCgroup(layout, name, limits);
    try {
      if (layout.version === 2) enableControllers(layout.dirs.memory);
      for (const dir of group.dirs) {
        mkdirSync(dir, { recursive: true });
        // The kernel fills a new group with its files; a plain folder (no cgroup mounted there) has none.
        if (!existsSync(join(dir, 'cgroup.procs'))) throw new Error(`${dir} is not in a cgroup filesystem`);
      }
      group.writeLimits();
      return group;
    } catch (e) {
      for (const dir of group.dirs) tryRmdir(dir);
      throw e;
    }
  }

  private writeLimits(): void {
    const { memoryBytes, maxTasks, cpus } = this.limits;
    const quota = Math.max(1000, Math.round(cpus * CFS_PERIOD_US));
    if (this.layout.version === 2) {
      writeFileSync(join(this.d.memory, 'memory.max'), String(memoryBytes));
      if (existsSync(join(this.d.memory, 'memory.swap.max'))) writeFileSync(join(this.d.memory, 'memory.swap.max'), '0');
      writeFileSync(join(this.d.pids, 'pids.max'), String(maxTasks));
      writeFileSync(join(this.d.cpu, 'cpu.max'), `${quota} ${CFS_PERIOD_US}`);
    } else {
      writeFileSync(join(this.d.memory, 'memory.limit_in_bytes'), String(memoryBytes));
      // Memory plus swap, so that swapping out does not lift the limit (written after the memory limit, which it may not be below).
      if (existsSync(join(this.d.memory, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(this.d.memory, 'memory.memsw.limit_in_bytes'), String(memoryBytes));
      writeFileSync(join(this.d.pids, 'pids.max'), String(maxTasks));
      writeFileSync(join(this.d.cpu, 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
      writeFileSync(join(this.d.cpu, 'cpu.cfs_quota_us'), String(quota));
    }
  }

  /**
   * The argv prefix that moves the run's first process into the group and then execs the rest:
   * every process the run starts afterwards is born inside it, so none can start outside.
   */
  joinArgv(command: string[]): string[] {
    const joins = this.dirs.map((d) => `echo $$ > '${join(d, 'cgroup.procs')}'`).join(' && ');
    return ['sh', '-c', `${joins} && exec "$@"`, 'sandbox-cgroup', ...command];
  }

  /** What the watch reads every 50 ms: the counters that say a limit was passed. */
  private counters(): Pick<CgroupUsage, 'cpuSeconds' | 'oomKills' | 'forksRefused'> {
    const v2 = this.layout.version === 2;
    const cpuSeconds = v2 ? counter(read(join(this.d.cpu, 'cpu.stat')), 'usage_usec') / 1e6 : Number(read(join(this.d.cpuacct, 'cpuacct.usage')).trim()) / 1e9;
    const oom = v2 ? read(join(this.d.memory, 'memory.events')) : read(join(this.d.memory, 'memory.oom_control'));
    return { cpuSeconds, oomKills: counter(oom, 'oom_kill'), forksRefused: counter(read(join(this.d.pids, 'pids.events')), 'max') };
  }

  usage(): CgroupUsage {
    return {
      ...this.counters(),
      memoryPeakBytes: optional(join(this.d.memory, this.layout.version === 2 ? 'memory.peak' : 'memory.max_usage_in_bytes')),
      tasksPeak: optional(join(this.d.pids, 'pids.peak')),
    };
  }

  /** The limit the run went past, if any: a process killed for memory, a fork refused, or the CPU seconds spent. */
  exceeded(): CgroupLimit | null {
    let u: ReturnType<RunCgroup['counters']>;
    try {
      u = this.counters();
    } catch {
      return null; // removed meanwhile
    }
    if (u.oomKills > 0) return 'memory';
    if (u.forksRefused > 0) return 'processes';
    if (u.cpuSeconds >= this.limits.cpuSeconds) return 'cpu time';
    return null;
  }

  private pids(): number[] {
    try {
      return read(join(this.d.pids, 'cgroup.procs')).split('\n').filter(Boolean).map(Number);
    } catch {
      return [];
    }
  }

  /** SIGKILL to every process in the group (it cannot leave it: moving out takes rights it lacks). */
  kill(): void {
    for (const pid of this.pids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }

  /**
   * Kills what is left and removes the group once its processes are gone (the kernel refuses to
   * remove a group with processes; they leave it as they are reaped).
   */
  async remove(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.kill();
      if (this.pids().length === 0 && this.dirs.map(tryRmdir).every(Boolean)) return;
      if (Date.now() > deadline) throw new Error(`the sandbox's cgroup ${this.dirs.join(', ')} still has processes ${this.pids().join(', ')} after ${timeoutMs / 1000} s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** On v2 a group's controllers are handed to its children through cgroup.subtree_control of each level. */
function enableControllers(own: string): void {
  const parent = join(own, CGROUP_PARENT);
  const enable = (dir: string) => {
    const active = read(join(dir, 'cgroup.subtree_control')).split(/\s+/);
    const wanted = ['memory', 'pids', 'cpu'].filter((c) => !active.includes(c));
    if (wanted.length) writeFileSync(join(dir, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
  };
  enable(own);
  mkdirSync(parent, { recursive: true });
  enable(parent);
}

/**
 * This host's layout when a run's group can really be made here (one is created and removed),
 * else why not: not root and no delegation, controllers missing, a read-only cgroup filesystem.
 */
export function probeCgroups(mountinfo = safeRead('/proc/self/mountinfo'), selfCgroup = safeRead('/proc/self/cgroup')): CgroupLayout | { reason: string } {
  if (process.platform !== 'linux') return { reason: `cgroups are Linux's; this is ${process.platform}` };
  const layout = cgroupLayout(mountinfo, selfCgroup);
  if ('reason' in layout) return layout;
  try {
    const probe = RunCgroup.create(layout, `probe-${process.pid}`, { memoryBytes: 64 * 1024 * 1024, maxTasks: 8, cpus: 1, cpuSeconds: 1 });
    for (const dir of probe.dirs) rmdirSync(dir);
    return layout;
  } catch (e) {
    return { reason: `a cgroup could not be created under ${layout.dirs.memory} (${(e as Error).message})` };
  }
}

function safeRead(file: string): string {
  try {
    return read(file);
  } catch {
    return '';
  }
}
