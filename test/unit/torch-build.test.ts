// Which PyTorch build the engine venv gets (src/stack/torch-build.mjs), without network: the CPU
// build on Linux without an NVIDIA GPU when its index answers, else the default index, under the
// venv key and with the pip command the venv has always had (so CI's cached venv is reused).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { cacheRoot } from '../../src/stack/cache.mjs';
import { engineVenvPath } from '../../src/stack/engine-env.mjs';
import { buildWithFallback, chooseTorchBuild, CPU_TORCH_INDEX, cpuTorchIndex, pipInstalls, venvName } from '../../src/stack/torch-build.mjs';

const nothingBuilt = { cpu: false, default: false };

describe('chooseTorchBuild', () => {
  for (const gpu of [false, true]) {
    for (const answers of [false, true]) {
      const expected = !gpu && answers ? 'cpu' : 'default';
      it(`Linux, ${gpu ? 'an' : 'no'} NVIDIA GPU, CPU index ${answers ? 'answers' : 'does not answer'}: ${expected}`, async () => {
        const probe = vi.fn(async () => answers);
        const choice = await chooseTorchBuild({ platform: 'linux', built: nothingBuilt, nvidiaGpu: () => gpu, probe });
        expect(choice.flavour).toBe(expected);
        // With a GPU the network is not asked at all.
        expect(probe).toHaveBeenCalledTimes(gpu ? 0 : 1);
        expect(choice.reason).toMatch(gpu ? /NVIDIA GPU is present/ : answers ? /answers/ : /does not answer/);
      });
    }
  }

  it('keeps a venv built earlier without probing: the default one (CI) or the CPU one', async () => {
    const probe = vi.fn(async () => true);
    expect(await chooseTorchBuild({ platform: 'linux', built: { cpu: false, default: true }, nvidiaGpu: () => false, probe })).toEqual({ flavour: 'default', reason: 'built earlier' });
    expect(await chooseTorchBuild({ platform: 'linux', built: { cpu: true, default: true }, nvidiaGpu: () => false, probe })).toEqual({ flavour: 'cpu', reason: 'built earlier' });
    expect(probe).not.toHaveBeenCalled();
  });

  it('a GPU wants the default (CUDA) build even where a CPU venv exists', async () => {
    const choice = await chooseTorchBuild({ platform: 'linux', built: { cpu: true, default: false }, nvidiaGpu: () => true, probe: async () => true });
    expect(choice.flavour).toBe('default');
  });

  it('leaves macOS and Windows on the default index (their PyPI wheel is CPU-only already)', async () => {
    for (const platform of ['darwin', 'win32']) {
      const probe = vi.fn(async () => true);
      expect((await chooseTorchBuild({ platform, built: nothingBuilt, nvidiaGpu: () => false, probe })).flavour).toBe('default');
      expect(probe).not.toHaveBeenCalled();
    }
  });

  it('DURABLE_COOKBOOK_TORCH forces a build, and names itself when wrong', async () => {
    const base = { platform: 'linux', built: { cpu: false, default: true }, nvidiaGpu: () => true, probe: async () => false };
    expect((await chooseTorchBuild({ ...base, setting: 'cpu' })).flavour).toBe('cpu');
    expect((await chooseTorchBuild({ ...base, setting: 'default', nvidiaGpu: () => false })).flavour).toBe('default');
    expect((await chooseTorchBuild({ ...base, setting: ' auto ' })).flavour).toBe('default');
    await expect(chooseTorchBuild({ ...base, setting: 'cuda' })).rejects.toThrow('DURABLE_COOKBOOK_TORCH=cuda: expected cpu, default or auto');
  });
});

describe('buildWithFallback', () => {
  const failingCpu = () => {
    const built: string[] = [];
    const build = async (flavour: 'cpu' | 'default', reason?: string) => {
      built.push(`${flavour}${reason ? ` (${reason})` : ''}`);
      if (flavour === 'cpu') throw new Error('pip … exited with 1\nmore');
      return flavour;
    };
    return { built, build };
  };

  it('builds the default venv when an automatic CPU build fails, and says so', async () => {
    const { built, build } = failingCpu();
    const lines: string[] = [];
    expect(await buildWithFallback({ flavour: 'cpu', forced: false, build, log: (l) => lines.push(l) })).toBe('default');
    expect(built).toEqual(['cpu', 'default (the CPU build failed)']);
    expect(lines.join('')).toContain('the CPU build failed (pip … exited with 1); building with the default index instead');
  });

  it('fails as asked when the CPU build was forced, and never retries a failed default build', async () => {
    const { built, build } = failingCpu();
    await expect(buildWithFallback({ flavour: 'cpu', forced: true, build, log: () => {} })).rejects.toThrow('exited with 1');
    const failing = async () => {
      throw new Error('no network');
    };
    await expect(buildWithFallback({ flavour: 'default', forced: false, build: failing, log: () => {} })).rejects.toThrow('no network');
    expect(built).toEqual(['cpu']);
  });
});

describe('the venv key and the pip commands', () => {
  const requirements = resolve(import.meta.dirname, '../../engine/requirements.txt');
  const hash = createHash('sha256').update(readFileSync(requirements)).digest('hex').slice(0, 12);

  it('keeps the default build under engine-venv-<sha256 of requirements.txt, 12 hex>, as always', () => {
    expect(venvName(hash, 'default')).toBe(`engine-venv-${hash}`);
    expect(engineVenvPath()).toBe(join(cacheRoot(), `engine-venv-${hash}`));
    expect(engineVenvPath('default')).toBe(engineVenvPath());
  });

  it('keeps the CPU build apart', () => {
    expect(engineVenvPath('cpu')).toBe(join(cacheRoot(), `engine-venv-${hash}-cpu`));
  });

  it('installs the default build with the one pip command it always had', () => {
    expect(pipInstalls({ flavour: 'default', requirementsFile: '/r/requirements.txt', torchPin: 'torch==2.15.0' })).toEqual([['-m', 'pip', 'install', '--disable-pip-version-check', '-r', '/r/requirements.txt']]);
  });

  it('installs the CPU build as torch==X+cpu from the CPU index first (PyPI cannot satisfy it), then the requirements', () => {
    expect(pipInstalls({ flavour: 'cpu', requirementsFile: '/r/requirements.txt', torchPin: 'torch==2.15.0', pipIndexUrl: 'https://mirror.example/simple' })).toEqual([
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--index-url', CPU_TORCH_INDEX, '--extra-index-url', 'https://mirror.example/simple', 'torch==2.15.0+cpu'],
      ['-m', 'pip', 'install', '--disable-pip-version-check', '-r', '/r/requirements.txt'],
    ]);
    expect(pipInstalls({ flavour: 'cpu', requirementsFile: '/r/requirements.txt', torchPin: 'torch==2.15.0' })[0]).toContain('https://pypi.org/simple');
  });

  it('takes a mirror of the CPU index from DURABLE_COOKBOOK_TORCH_CPU_INDEX', () => {
    expect(cpuTorchIndex({})).toBe(CPU_TORCH_INDEX);
    expect(cpuTorchIndex({ DURABLE_COOKBOOK_TORCH_CPU_INDEX: 'http://mirror.local/whl/cpu/' })).toBe('http://mirror.local/whl/cpu');
    const [torch] = pipInstalls({ flavour: 'cpu', requirementsFile: 'r.txt', torchPin: 'torch==2.15.0', cpuIndex: 'http://mirror.local/whl/cpu' });
    expect(torch.slice(4, 6)).toEqual(['--index-url', 'http://mirror.local/whl/cpu']);
  });
});
