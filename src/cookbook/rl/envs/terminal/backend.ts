// Where a terminal task's episodes run: a backend turns a task's environment into its starting
// files and opens sandboxes holding given files. The durable layer (durable-sandbox.ts) records
// each operation's result with the files after it (`snapshot()`), and opens a sandbox from the last
// recorded files when a retried rollout must act again — so a backend's snapshot is whatever it
// can restore exactly.
import path from 'node:path';
import { LocalEpisodeSandbox, type EpisodeSandboxLimits } from '../../../sandbox/episode.js';
import type { SandboxInterface } from '../../../sandbox/types.js';
import { buildTaskImage, type BuiltImage } from './image.js';
import { taskSetting, type HarborTask } from './tasks.js';

export interface SnapshotSandbox extends SandboxInterface {
  /** The sandbox's files, in the form `open` takes them back. */
  snapshot(): Promise<Buffer>;
}

export interface TaskEnvironment {
  /** The files an episode starts from. */
  files: Buffer;
  open(files: Buffer): Promise<SnapshotSandbox>;
}

export interface TerminalBackend {
  readonly name: string;
  environment(task: HarborTask, limits: Partial<EpisodeSandboxLimits>): Promise<TaskEnvironment>;
}

/** The task's image, built once per process (and cached on disk across processes). */
const images = new Map<string, Promise<BuiltImage>>();
export function taskImage(task: HarborTask): Promise<BuiltImage> {
  const envDir = path.join(task.taskDir, 'environment');
  if (!images.has(envDir)) {
    const built = buildTaskImage(envDir, { timeoutSeconds: taskSetting(task, 'environment', 'build_timeout_sec') ?? 600 });
    built.catch(() => images.delete(envDir)); // a failed build is tried again next time
    images.set(envDir, built);
  }
  return images.get(envDir)!;
}

/** This host's namespaces: the Dockerfile carried out without Docker (image.ts), each episode in a LocalEpisodeSandbox. */
export const localBackend: TerminalBackend = {
  name: 'local',
  async environment(task, limits) {
    const image = await taskImage(task);
    return { files: image.snapshot, open: (files) => LocalEpisodeSandbox.create({ from: files, env: image.env, limits }) };
  },
};
