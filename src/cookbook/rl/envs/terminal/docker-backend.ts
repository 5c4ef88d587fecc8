// Terminal episodes in Docker containers, as the reference runs them (a container per episode from
// the task's environment/Dockerfile): the image is `docker build` of environment/, tagged by a hash
// of every file of that context, built once per process (Docker's layer cache makes a build of an
// unchanged context and base image take a second, and a changed base image is picked up); each
// episode is a DockerEpisodeSandbox of it, its files the container's changes (none at first).
//
// `sandbox_backend: auto` (env.ts) takes Docker when an engine answers `docker info` within a few
// seconds, else this host's namespaces (backend.ts's localBackend), and says which in one log line.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, lstatSync, readlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { log } from '../../../logging.js';
import { DockerEpisodeSandbox, clearStaleEpisodeContainers, docker, dockerEngine, emptySnapshot } from '../../../sandbox/docker-episode.js';
import { SandboxError, SandboxUnavailableError } from '../../../sandbox/types.js';
import { localBackend, type TerminalBackend } from './backend.js';
import { taskSetting, type HarborTask } from './tasks.js';

export const TASK_IMAGE_REPOSITORY = 'durable-cookbook/terminal-task';

/** A hash of the build context: every path under it (name order), its mode, and its content or link target. */
export function contextHash(contextDir: string): string {
  const h = createHash('sha256').update('docker build context\n');
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const st = lstatSync(path);
      h.update(`\n${relative(contextDir, path)} ${st.mode.toString(8)}\n`);
      if (st.isDirectory()) walk(path);
      else if (st.isSymbolicLink()) h.update(readlinkSync(path));
      else h.update(readFileSync(path));
    }
  };
  walk(contextDir);
  return h.digest('hex').slice(0, 32);
}

/** The image of `environment/` (the build may use the network, as on Modal). */
async function buildImage(envDir: string, timeoutSeconds: number): Promise<string> {
  const tag = `${TASK_IMAGE_REPOSITORY}:${contextHash(envDir)}`;
  // `--network host`: an engine run without a bridge (dockerd --bridge=none) builds only so.
  const r = await docker(['build', '--network', 'host', '-t', tag, envDir], { timeoutMs: timeoutSeconds * 1000 });
  if (r.code !== 0) {
    const tail = r.stderr.trim().split('\n').slice(-8).join('\n');
    const hint = /pull access denied|not found|failed to resolve|dial tcp|TLS handshake|no such host/i.test(tail)
      ? ' (a base image Docker Hub cannot give here: `npm run docker:base-images -- --no-pull` builds local stand-ins of python:3.11-slim-bookworm and others)'
      : '';
    throw new SandboxError(`${join(envDir, 'Dockerfile')}: docker build failed (${r.code === null ? `killed after its build_timeout_sec of ${timeoutSeconds} s` : `exit ${r.code}`})${hint}: ${tail}`);
  }
  return tag;
}

const images = new Map<string, Promise<string>>();
/** The task's Docker image (its tag), built once per process. */
export function taskDockerImage(task: HarborTask): Promise<string> {
  const envDir = join(task.taskDir, 'environment');
  if (!images.has(envDir)) {
    const built = buildImage(envDir, taskSetting(task, 'environment', 'build_timeout_sec') ?? 600);
    built.catch(() => images.delete(envDir)); // a failed build is tried again next time
    images.set(envDir, built);
  }
  return images.get(envDir)!;
}

let staleCleared: Promise<unknown> | null = null;

export const dockerBackend: TerminalBackend = {
  name: 'docker',
  async environment(task, limits) {
    // Containers a killed worker of this host left behind go first.
    staleCleared ??= clearStaleEpisodeContainers().catch(() => 0);
    await staleCleared;
    const image = await taskDockerImage(task);
    return { files: emptySnapshot(image), open: (files) => DockerEpisodeSandbox.create({ image, from: files, limits }) };
  },
};

export type SandboxBackendChoice = 'auto' | 'local' | 'docker';

/** Seconds `docker info` has to answer before `auto` takes the local sandbox. */
const PROBE_MS = 5000;
let chosen: Promise<TerminalBackend> | null = null;

/** `auto`'s choice now: docker when an engine answers, else local; logged. */
export async function chooseBackend(probeMs = PROBE_MS): Promise<TerminalBackend> {
  const engine = await dockerEngine(probeMs);
  if ('version' in engine) {
    log.info({ sandbox_backend: 'docker', docker_engine: engine.version }, 'terminal episodes: sandbox_backend auto chose docker (a container per episode)');
    return dockerBackend;
  }
  log.info({ sandbox_backend: 'local', why: engine.unavailable }, 'terminal episodes: sandbox_backend auto chose local (no Docker engine answered)');
  return localBackend;
}

/** `auto`'s choice, made once per process. */
export function autoBackend(): Promise<TerminalBackend> {
  chosen ??= chooseBackend();
  return chosen;
}

let dockerChecked: Promise<void> | null = null;
const requiredDocker: TerminalBackend = {
  name: 'docker',
  async environment(task, limits) {
    dockerChecked ??= dockerEngine(PROBE_MS).then((engine) => {
      if ('unavailable' in engine) throw new SandboxUnavailableError(`dataset.args.sandbox_backend is "docker", but no Docker engine answers: ${engine.unavailable}`);
    });
    dockerChecked.catch(() => (dockerChecked = null));
    await dockerChecked;
    return dockerBackend.environment(task, limits);
  },
};

/** The backend a config's `sandbox_backend` names. */
export function terminalBackend(choice: SandboxBackendChoice): TerminalBackend {
  if (choice === 'local') return localBackend;
  if (choice === 'docker') return requiredDocker;
  return { name: 'auto', environment: async (task, limits) => (await autoBackend()).environment(task, limits) };
}
