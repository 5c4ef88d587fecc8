// Harbor task folders (reference 0.6.1 recipes/harbor_rl/harbor_env.py: HarborTask,
// load_harbor_tasks): each task is a folder with instruction.md, task.toml,
// environment/Dockerfile (and its build context), tests/test.sh and usually solution/. A dataset
// is a folder of task folders — by default ~/.cache/harbor/tasks/<dataset>/, where `uvx harbor
// datasets download terminal-bench@2.0 -o ~/.cache/harbor/tasks/terminal-bench-2.0` puts them.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { ConfigurationError } from '../../../errors.js';
import { compareCodePoints } from '../../../renderers/py-json.js';

export const HARBOR_CACHE_DIR = join(homedir(), '.cache', 'harbor', 'tasks');

export interface HarborTask {
  taskName: string;
  instruction: string;
  /** Holds environment/Dockerfile and tests/test.sh. */
  taskDir: string;
  /** task.toml, parsed. */
  config: Record<string, unknown>;
}

/** A folder of task folders: `dataset` as a path (absolute, or relative to `baseDir`) when one is there, else a name under ~/.cache/harbor/tasks/. */
export function harborDatasetDir(dataset: string, baseDir: string): string {
  const local = resolve(baseDir, dataset);
  if (existsSync(local)) return local;
  const cached = join(HARBOR_CACHE_DIR, dataset);
  if (existsSync(cached)) return cached;
  throw new ConfigurationError(`harbor tasks: no folder ${local}, nor ${cached} (download one with \`uvx harbor datasets download terminal-bench@2.0 -o ${join(HARBOR_CACHE_DIR, 'terminal-bench-2.0')}\`)`);
}

/** Python's Path.read_text(), as the reference reads task files: strict UTF-8 (a BOM kept), universal newlines. */
export function readText(path: string): string {
  return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(readFileSync(path)).replace(/\r\n?/g, '\n');
}

function readTaskFile(path: string): string {
  try {
    return readText(path);
  } catch (e) {
    throw new ConfigurationError(`${path}: ${(e as Error).message} (task files are UTF-8)`);
  }
}

function loadTask(taskDir: string, name: string): HarborTask {
  for (const required of ['instruction.md', 'task.toml', 'environment/Dockerfile', 'tests/test.sh']) {
    if (!existsSync(join(taskDir, required))) throw new ConfigurationError(`harbor task ${taskDir}: ${required} is missing (a task folder holds instruction.md, task.toml, environment/Dockerfile and tests/test.sh)`);
  }
  let config: Record<string, unknown>;
  try {
    config = parseToml(readTaskFile(join(taskDir, 'task.toml'))) as Record<string, unknown>;
  } catch (e) {
    throw new ConfigurationError(`${join(taskDir, 'task.toml')}: ${(e as Error).message.split('\n')[0]}`);
  }
  return { taskName: name, instruction: readTaskFile(join(taskDir, 'instruction.md')), taskDir, config };
}

/** The tasks of a folder, sorted by name (the reference's order), each read and checked. */
export function loadHarborTasks(datasetDir: string): HarborTask[] {
  const tasks: HarborTask[] = [];
  for (const name of readdirSync(datasetDir).sort()) {
    const dir = join(datasetDir, name);
    if (!statSync(dir).isDirectory()) continue;
    // `harbor datasets download` nests each task one level deeper, under a hash of its id.
    if (!existsSync(join(dir, 'task.toml'))) {
      const inner = readdirSync(dir).filter((n) => existsSync(join(dir, n, 'task.toml')));
      if (inner.length === 1) {
        tasks.push(loadTask(join(dir, inner[0]), inner[0]));
        continue;
      }
    }
    tasks.push(loadTask(dir, name));
  }
  if (!tasks.length) throw new ConfigurationError(`harbor tasks: ${datasetDir} holds no task folders`);
  // Python sorts strings by code point; JS's < compares UTF-16 units.
  return tasks.sort((a, b) => compareCodePoints(a.taskName, b.taskName));
}

/** A number of task.toml's `[section] key`, when there is one. */
export function taskSetting(task: HarborTask, section: string, key: string): number | null {
  const value = (task.config[section] as Record<string, unknown> | undefined)?.[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}
