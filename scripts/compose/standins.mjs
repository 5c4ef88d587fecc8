// The base images the Dockerfiles and docker-compose.yml name (node:20-bookworm-slim,
// python:3.11-slim-bookworm, temporalio/temporal:<version>): used as they are when the engine has
// them, pulled when it can, and otherwise built here as local stand-ins under exactly those names,
// so that the Dockerfiles stay what users build. A stand-in is Debian bookworm (debootstrap,
// cached as a tarball) plus the runtime the real image brings: this machine's Node (and npm) with
// the image's `node` user (uid 1000); Debian's Python 3.11 with venv and `python`; the Temporal
// CLI binary of the tagged version with the image's `temporal` user (uid 1000) and entry point.
// Stand-ins are labelled, and rebuilt when their recipe changes; a real image is never replaced.
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { run } from './proc.mjs';

const LABEL = 'durable-cookbook.standin';
const ROOTFS_IMAGE = 'durable-cookbook/bookworm-standin:latest';
const MIRROR = process.env.COMPOSE_TEST_DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';

/** FROM images of a Dockerfile (build stages excluded) and image: lines of a compose file. */
export function baseImagesOf(files) {
  const names = new Set();
  for (const { path, kind } of files) {
    const text = readFileSync(path, 'utf8');
    if (kind === 'dockerfile') {
      const stages = new Set();
      for (const m of text.matchAll(/^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?/gim)) {
        if (!stages.has(m[1].toLowerCase())) names.add(m[1]);
        if (m[2]) stages.add(m[2].toLowerCase());
      }
    } else {
      for (const m of text.matchAll(/^\s*image:\s*["']?([^\s"'#]+)/gm)) names.add(m[1]);
    }
  }
  return [...names];
}

async function imageLabel(docker, name) {
  const r = await docker(['image', 'inspect', '--format', `{{ index .Config.Labels "${LABEL}" }}`, name], { allowFail: true });
  if (r.code !== 0) return { exists: false };
  const label = r.stdout.trim();
  return { exists: true, label: label && label !== '<no value>' ? label : undefined };
}

const rootfsTarball = (cacheDir) => join(cacheDir, 'bookworm-rootfs.tar');

async function debootstrapPath() {
  return (await run('sh', ['-c', 'command -v debootstrap || ls /usr/sbin/debootstrap'], { allowFail: true })).stdout.trim().split('\n')[0];
}

/**
 * What this machine lacks to build stand-ins (empty when nothing): debootstrap, run as root, makes
 * the Debian root filesystem they start from, unless an earlier run left it in the cache.
 */
export async function standinPrerequisites(docker, cacheDir) {
  if (existsSync(rootfsTarball(cacheDir)) || (await imageLabel(docker, ROOTFS_IMAGE)).exists) return [];
  const problems = [];
  if (!(await debootstrapPath())) problems.push('debootstrap is not installed (Debian/Ubuntu: `apt-get install debootstrap`)');
  if (process.getuid?.() !== 0) problems.push('debootstrap must run as root (run this with sudo)');
  return problems;
}

/** Debian bookworm (minbase + ca-certificates) as a docker-importable tarball, cached. */
async function bookwormRootfs(cacheDir, log) {
  const tarball = rootfsTarball(cacheDir);
  if (existsSync(tarball)) return tarball;
  const debootstrap = await debootstrapPath();
  if (!debootstrap) throw new Error('building stand-in base images needs debootstrap (Debian: apt-get install debootstrap)');
  mkdirSync(cacheDir, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'cookbook-rootfs-'));
  try {
    const root = join(work, 'root');
    log(`debootstrap bookworm (minbase) from ${MIRROR} …`);
    const r = await run(debootstrap, ['--variant=minbase', '--include=ca-certificates', 'bookworm', root, MIRROR], { timeoutMs: 900_000 });
    log(`debootstrap done in ${(r.ms / 1000).toFixed(0)} s`);
    writeFileSync(
      join(root, 'etc/apt/sources.list'),
      `deb ${MIRROR} bookworm main\ndeb ${MIRROR} bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main\n`,
    );
    rmSync(join(root, 'var/cache/apt/archives'), { recursive: true, force: true });
    mkdirSync(join(root, 'var/cache/apt/archives/partial'), { recursive: true });
    rmSync(join(root, 'var/lib/apt/lists'), { recursive: true, force: true });
    mkdirSync(join(root, 'var/lib/apt/lists/partial'), { recursive: true });
    await run('tar', ['--numeric-owner', '-C', root, '-cf', `${tarball}.tmp`, '.']);
    renameSync(`${tarball}.tmp`, tarball);
    return tarball;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function ensureRootfsImage(docker, cacheDir, log) {
  const tarball = await bookwormRootfs(cacheDir, log);
  const { size, mtimeMs } = statSync(tarball);
  const stamp = createHash('sha256').update(`${tarball}:${size}:${mtimeMs}`).digest('hex').slice(0, 12);
  const have = await imageLabel(docker, ROOTFS_IMAGE);
  if (have.exists && have.label === stamp) return;
  log(`docker import ${tarball} → ${ROOTFS_IMAGE}`);
  await docker(['import', '--change', `LABEL ${LABEL}=${stamp}`, '--change', 'CMD ["bash"]', tarball, ROOTFS_IMAGE]);
}

/**
 * The certificate authorities this machine adds to the system's (/usr/local/share/ca-certificates,
 * e.g. a TLS-inspecting proxy's): the stand-ins trust them too, as the machine's own tools do, so
 * that builds on them reach npm and PyPI from here. Real base images on a normal network need none.
 */
const HOST_CA_DIR = '/usr/local/share/ca-certificates';
function hostTrust() {
  const files = existsSync(HOST_CA_DIR) ? readdirSync(HOST_CA_DIR, { recursive: true }).map(String).filter((f) => f.endsWith('.crt')).sort() : [];
  if (files.length === 0) return { key: '', copy: () => {}, lines: '' };
  const hash = createHash('sha256');
  for (const f of files) hash.update(f).update(readFileSync(join(HOST_CA_DIR, f)));
  return {
    key: ` +ca ${hash.digest('hex').slice(0, 12)}`,
    copy: (ctx) => cpSync(HOST_CA_DIR, join(ctx, 'ca'), { recursive: true }),
    lines: `COPY ca/ ${HOST_CA_DIR}/
RUN update-ca-certificates >/dev/null
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt PIP_CERT=/etc/ssl/certs/ca-certificates.crt REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
`,
  };
}

/** Recipes: a Dockerfile over the bookworm stand-in and the files its context needs. */
async function recipeFor(name, opts) {
  const recipe = await baseRecipeFor(name, opts);
  if (!recipe) return undefined;
  const trust = hostTrust();
  const [from, ...rest] = recipe.dockerfile.split('\n');
  return {
    key: recipe.key + trust.key,
    files: (ctx) => {
      trust.copy(ctx);
      recipe.files(ctx);
    },
    dockerfile: [from, trust.lines + rest.join('\n')].join('\n'),
  };
}

async function baseRecipeFor(name, { temporalCli }) {
  let m;
  if ((m = /^node:(\d+)-bookworm(?:-slim)?$/.exec(name))) {
    const node = realpathSync(process.execPath);
    const major = process.versions.node.split('.')[0];
    if (major !== m[1]) throw new Error(`a stand-in for ${name} copies this machine's Node, which is ${process.version}`);
    const npmDir = [join(dirname(dirname(node)), 'lib', 'node_modules', 'npm'), join(dirname(node), 'node_modules', 'npm')].find((d) => existsSync(join(d, 'package.json')));
    if (!npmDir) throw new Error(`cannot find npm beside ${node}`);
    const npmVersion = JSON.parse(readFileSync(join(npmDir, 'package.json'), 'utf8')).version;
    return {
      key: `node ${process.version} npm ${npmVersion}`,
      files: (ctx) => {
        copyFileSync(node, join(ctx, 'node'));
        cpSync(npmDir, join(ctx, 'npm'), { recursive: true });
      },
      dockerfile: `FROM ${ROOTFS_IMAGE}
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && groupadd --gid 1000 node \\
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \\
 && node --version && npm --version
ENV NODE_VERSION=${process.versions.node}
CMD ["node"]
`,
    };
  }
  if ((m = /^python:3\.11(?:\.\d+)?-(?:slim-)?bookworm$/.exec(name))) {
    return {
      key: 'debian bookworm python3 3.11 + venv',
      files: () => {},
      dockerfile: `FROM ${ROOTFS_IMAGE}
ENV LANG=C.UTF-8
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv \\
 && rm -rf /var/lib/apt/lists/* \\
 && ln -s /usr/bin/python3 /usr/local/bin/python \\
 && python --version
CMD ["python3"]
`,
    };
  }
  if ((m = /^temporalio\/temporal:(\d+\.\d+\.\d+)$/.exec(name))) {
    const cli = await temporalCli();
    const version = (await run(cli, ['--version'])).stdout.trim();
    if (!version.includes(`version ${m[1]} `)) throw new Error(`a stand-in for ${name} needs the Temporal CLI ${m[1]}; ${cli} is "${version}"`);
    return {
      key: version,
      files: (ctx) => copyFileSync(realpathSync(cli), join(ctx, 'temporal')),
      // As the real image: the CLI on PATH as entry point, run as its user temporal (uid 1000).
      dockerfile: `FROM ${ROOTFS_IMAGE}
COPY temporal /usr/local/bin/temporal
RUN chmod 0755 /usr/local/bin/temporal && useradd --uid 1000 --user-group --create-home temporal
USER temporal
ENTRYPOINT ["temporal"]
`,
    };
  }
  return undefined;
}

/**
 * Makes every image in `names` available to the engine; returns one line per image saying how.
 * First what is there or can be pulled; then, before building anything, whether stand-ins can be
 * built here at all (an error names each image still missing and what this machine lacks).
 * @param {(args: string[], opts?: object) => Promise<{ code: number, stdout: string }>} docker
 * @param {string[]} names
 * @param {{ cacheDir: string, log: (msg: string) => void, pull: boolean, temporalCli: () => Promise<string> }} opts
 */
export async function ensureBaseImages(docker, names, opts) {
  const { cacheDir, log } = opts;
  const report = [];
  const toBuild = [];
  for (const name of names) {
    const have = await imageLabel(docker, name);
    if (have.exists && !have.label) {
      report.push(`${name}: present (not a stand-in)`);
      continue;
    }
    // A recipe is worked out only when a stand-in is in play: it may need this machine's Node of
    // the image's major version, or the Temporal CLI, which a pulled image does not.
    let memo;
    const recipeOf = async () => {
      if (memo) return memo.value;
      const recipe = await recipeFor(name, opts);
      memo = { value: recipe && { recipe, stamp: createHash('sha256').update(recipe.key + recipe.dockerfile).digest('hex').slice(0, 12) } };
      return memo.value;
    };
    if (have.exists) {
      const cached = await recipeOf();
      if (cached && have.label === cached.stamp) {
        report.push(`${name}: stand-in (cached: ${cached.recipe.key})`);
        continue;
      }
    } else if (opts.pull) {
      const pulled = await docker(['pull', name], { allowFail: true, timeoutMs: 600_000 });
      if (pulled.code === 0) {
        report.push(`${name}: pulled`);
        continue;
      }
      log(`cannot pull ${name} (${pulled.stderr.trim().split('\n').pop()}): building a local stand-in`);
    }
    const standin = await recipeOf();
    if (!standin) throw new Error(`${name} is not available and there is no stand-in recipe for it`);
    const { recipe, stamp } = standin;
    toBuild.push({ name, recipe, stamp });
  }
  if (toBuild.length === 0) return report;
  const problems = await standinPrerequisites(docker, cacheDir);
  if (problems.length) {
    throw new Error(`${toBuild.map((b) => b.name).join(', ')} cannot be pulled, and building local stand-ins needs what this machine lacks:\n  - ${problems.join('\n  - ')}`);
  }
  await ensureRootfsImage(docker, cacheDir, log);
  for (const { name, recipe, stamp } of toBuild) {
    const ctx = mkdtempSync(join(tmpdir(), 'cookbook-standin-'));
    try {
      recipe.files(ctx);
      writeFileSync(join(ctx, 'Dockerfile'), recipe.dockerfile);
      const r = await docker(['build', '--network', 'host', '--label', `${LABEL}=${stamp}`, '-t', name, ctx], { timeoutMs: 900_000 });
      report.push(`${name}: stand-in built in ${(r.ms / 1000).toFixed(1)} s (${recipe.key})`);
    } finally {
      rmSync(ctx, { recursive: true, force: true });
    }
  }
  return report;
}

/** The base images the project's Dockerfiles and compose file name. */
export function projectBaseImages(repo) {
  return baseImagesOf([
    { path: join(repo, 'engine', 'Dockerfile'), kind: 'dockerfile' },
    { path: join(repo, 'Dockerfile.worker'), kind: 'dockerfile' },
    { path: join(repo, 'docker-compose.yml'), kind: 'compose' },
  ]);
}
