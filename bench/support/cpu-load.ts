// A fixed CPU load for benches' `--load` arms: one busy process pinned to one core (taskset, where
// the machine has it), started before an arm and stopped after it, so both sides of a comparison
// run beside the same load.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';

export interface CpuLoad {
  /** What runs, for the bench's header: "1 busy process pinned to core 1". */
  readonly description: string;
  /** The busy process (taskset execs it in place), for CPU accounting. */
  readonly pid?: number;
  stop(): Promise<void>;
}

const hasTaskset = () => spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status === 0;

/** The last core: the one the OS least often hands to a new process first. */
const loadCore = () => availableParallelism() - 1;

export function describeCpuLoad(): string {
  return hasTaskset() ? `1 busy process pinned to core ${loadCore()} of ${availableParallelism()}` : `1 busy process, unpinned (no taskset), ${availableParallelism()} cores`;
}

export function startCpuLoad(): CpuLoad {
  const busy = ['-e', 'for (;;) {}'];
  const child: ChildProcess = hasTaskset()
    ? spawn('taskset', ['-c', String(loadCore()), process.execPath, ...busy], { stdio: 'ignore' })
    : spawn(process.execPath, busy, { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // The bench never leaves its load running behind it.
  const onExit = () => child.kill('SIGKILL');
  process.once('exit', onExit);
  return {
    description: describeCpuLoad(),
    pid: child.pid,
    async stop() {
      process.off('exit', onExit);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
