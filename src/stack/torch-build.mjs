// Which PyTorch build goes into the engine's venv. PyPI's torch for Linux is the CUDA build: some
// 2.9 GB of downloads and a 5.6 GB venv, which a machine without an NVIDIA GPU never uses. There,
// PyTorch's CPU wheel index gives the same version (`2.15.0+cpu`) at a fraction of the size. The
// index is not reachable from every network (CI's is one), and there the venv must stay exactly
// what it has always been: the default index, and the key `engine-venv-<hash>` that caches it.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

export const CPU_TORCH_INDEX = 'https://download.pytorch.org/whl/cpu';

/** The CPU index to use: DURABLE_COOKBOOK_TORCH_CPU_INDEX (a mirror of it), else PyTorch's. */
export function cpuTorchIndex(env = process.env) {
  return (env.DURABLE_COOKBOOK_TORCH_CPU_INDEX || CPU_TORCH_INDEX).replace(/\/+$/, '');
}

/** Whether this machine has an NVIDIA GPU: the driver lists one, or nvidia-smi does. */
export function hasNvidiaGpu() {
  try {
    if (readdirSync('/proc/driver/nvidia/gpus').length > 0) return true;
  } catch {
    // no NVIDIA driver loaded (or not Linux)
  }
  const smi = spawnSync('nvidia-smi', ['-L'], { encoding: 'utf8', timeout: 10_000 });
  return smi.status === 0 && /^GPU \d+/m.test(smi.stdout);
}

/**
 * Whether the CPU index answers within a few seconds. Node's fetch does not use HTTPS_PROXY, so
 * behind a proxy this says no and the venv is built as it always was.
 */
export async function cpuIndexReachable(index = cpuTorchIndex(), timeoutMs = 4000) {
  try {
    const res = await fetch(`${index}/torch/`, { method: 'HEAD', signal: AbortSignal.timeout(timeoutMs) });
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * The build to install. A venv already built is kept (no probe, no rebuild); `setting`
 * (DURABLE_COOKBOOK_TORCH) forces one; otherwise Linux without an NVIDIA GPU takes the CPU build
 * when its index answers. Elsewhere PyPI's wheel is already CPU-only (macOS, Windows) or wanted
 * (a GPU), and the default index stays.
 * @param {{ setting?: string, platform: string, built: { cpu: boolean, default: boolean },
 *           nvidiaGpu: () => boolean, probe: () => Promise<boolean>, cpuIndex?: string }} opts
 * @returns {Promise<{ flavour: 'cpu' | 'default', reason: string }>}
 */
export async function chooseTorchBuild({ setting, platform, built, nvidiaGpu, probe, cpuIndex = CPU_TORCH_INDEX }) {
  const value = (setting ?? '').trim() || 'auto';
  if (value === 'cpu') return { flavour: 'cpu', reason: 'DURABLE_COOKBOOK_TORCH=cpu' };
  if (value === 'default') return { flavour: 'default', reason: 'DURABLE_COOKBOOK_TORCH=default' };
  if (value !== 'auto') throw new Error(`DURABLE_COOKBOOK_TORCH=${value}: expected cpu, default or auto`);
  if (platform !== 'linux') return { flavour: 'default', reason: `PyPI's PyTorch for ${platform} is CPU-only already` };
  if (nvidiaGpu()) return { flavour: 'default', reason: 'an NVIDIA GPU is present' };
  if (built.cpu) return { flavour: 'cpu', reason: 'built earlier' };
  if (built.default) return { flavour: 'default', reason: 'built earlier' };
  return (await probe())
    ? { flavour: 'cpu', reason: `no NVIDIA GPU, and ${cpuIndex} answers` }
    : { flavour: 'default', reason: `no NVIDIA GPU, but ${cpuIndex} does not answer` };
}

/**
 * Builds `flavour`; when a CPU build chosen automatically fails (say, the index has no wheel for
 * this machine), builds the default one instead, which still gives a working engine. A forced
 * choice (DURABLE_COOKBOOK_TORCH) fails as asked.
 * @template T
 * @param {{ flavour: 'cpu' | 'default', forced: boolean, build: (flavour: 'cpu' | 'default', reason?: string) => Promise<T>, log: (line: string) => void }} opts
 * @returns {Promise<T>}
 */
export async function buildWithFallback({ flavour, forced, build, log }) {
  try {
    return await build(flavour);
  } catch (err) {
    if (flavour !== 'cpu' || forced) throw err;
    log(`[engine-env] the CPU build failed (${err.message.split('\n')[0]}); building with the default index instead\n`);
    return build('default', 'the CPU build failed');
  }
}

/** The venv's folder name for a build: the default build keeps the name it has always had. */
export function venvName(requirementsHash, flavour) {
  return flavour === 'cpu' ? `engine-venv-${requirementsHash}-cpu` : `engine-venv-${requirementsHash}`;
}

/**
 * pip's commands for the build: the CPU build installs torch alone first, as `torch==X+cpu` from
 * the CPU index (its dependencies from there or the usual index), so that `-r requirements.txt`
 * finds `torch==X` satisfied by `X+cpu` and keeps it. The `+cpu` pin matters: pip treats an index
 * it cannot reach as a warning, and `torch==X` alone would then quietly take PyPI's CUDA build.
 * @param {{ flavour: 'cpu' | 'default', requirementsFile: string, torchPin?: string, pipIndexUrl?: string, cpuIndex?: string }} opts
 * @returns {string[][]} pip arguments, one list per pip call
 */
export function pipInstalls({ flavour, requirementsFile, torchPin = '', pipIndexUrl = 'https://pypi.org/simple', cpuIndex = CPU_TORCH_INDEX }) {
  const pip = ['-m', 'pip', 'install', '--disable-pip-version-check'];
  const all = [...pip, '-r', requirementsFile];
  if (flavour !== 'cpu') return [all];
  const cpuPin = torchPin.includes('+') ? torchPin : `${torchPin}+cpu`;
  return [[...pip, '--index-url', cpuIndex, '--extra-index-url', pipIndexUrl, cpuPin], all];
}
