// The S3-compatible server the storage tests run against: SeaweedFS (Apache-2.0), one `weed`
// binary, built once from the Go module proxy into the project's cache and reused after that.
// `go install module@version` refuses this module (its go.mod has replace directives), so the
// module's source is downloaded, copied somewhere writable and built there.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot } from './cache.mjs';

export const SEAWEEDFS_MODULE = 'github.com/seaweedfs/seaweedfs';
export const SEAWEEDFS_VERSION = 'v0.0.0-20261109003541-7506e5f91cd6';

export function seaweedFsPath() {
  return join(cacheRoot(), `seaweedfs-${SEAWEEDFS_VERSION}`, 'weed');
}

function works(path) {
  return existsSync(path) && spawnSync(path, ['version'], { encoding: 'utf8' }).status === 0;
}

function goVersion() {
  const r = spawnSync('go', ['version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function run(command, args, opts) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', opts.capture ? 'pipe' : 'inherit', 'inherit'], ...opts });
    let out = '';
    child.stdout?.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('exit', (code, signal) => (code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} failed (${code ?? signal}) in ${opts.cwd}`))));
  });
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
};

/**
 * Holds `lock` (a folder: its creation is atomic) while `fn` runs. Another process's build is
 * waited out (it may finish the job); a lock whose holder is gone is taken over.
 */
async function withLock(lock, log, fn) {
  let told = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      let holder;
      try {
        holder = Number(readFileSync(join(lock, 'pid'), 'utf8'));
      } catch {
        // the holder has made the folder and not yet written its pid
      }
      if (holder && !alive(holder)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (!told) log(`waiting for process ${holder ?? '?'} that is building SeaweedFS (lock ${lock})`);
      told = true;
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** The path of a working `weed` binary of the pinned version, building it on first use (a few minutes). */
export async function ensureSeaweedFs({ log = console.error } = {}) {
  const bin = seaweedFsPath();
  if (works(bin)) return bin;
  const dir = join(bin, '..');
  mkdirSync(join(dir, '..'), { recursive: true });
  return withLock(`${dir}.lock`, log, async () => {
    if (works(bin)) return bin; // built by the process we waited for
    const go = goVersion();
    if (!go) {
      throw new Error(`the S3 server the tests use (SeaweedFS ${SEAWEEDFS_VERSION}) is built from source and needs Go 1.26 or newer: \`go\` was not found on PATH (install it from https://go.dev/dl/)`);
    }
    const started = Date.now();
    log(`building SeaweedFS ${SEAWEEDFS_VERSION} (the S3 server for the storage tests) with ${go} into ${dir}: a few minutes, once`);
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    try {
      const info = JSON.parse(await run('go', ['mod', 'download', '-json', `${SEAWEEDFS_MODULE}@${SEAWEEDFS_VERSION}`], { cwd: tmp, capture: true }));
      if (!info.Dir) throw new Error(`go mod download ${SEAWEEDFS_MODULE}@${SEAWEEDFS_VERSION} gave no source folder: ${info.Error ?? JSON.stringify(info)}`);
      // The module cache is read-only; the build writes beside the source.
      const src = join(tmp, 'src');
      cpSync(info.Dir, src, { recursive: true });
      await run('chmod', ['-R', 'u+w', src], { cwd: tmp });
      await run('go', ['build', '-o', join(tmp, 'weed'), './weed'], { cwd: src, env: { ...process.env, GOFLAGS: '-buildvcs=false' } });
      rmSync(src, { recursive: true, force: true });
      if (!works(join(tmp, 'weed'))) throw new Error(`SeaweedFS built but ${join(tmp, 'weed')} does not run`);
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    log(`built SeaweedFS in ${Math.round((Date.now() - started) / 1000)} s: ${bin}`);
    return bin;
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await ensureSeaweedFs({ log: console.log }));
}
