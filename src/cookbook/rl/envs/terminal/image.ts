// A task's environment/Dockerfile, built without Docker into the starting state of its episode
// sandboxes. The host's Debian /usr stands in for the base image, so FROM may name a Debian-based
// image (python:*, debian:*); WORKDIR, COPY, ADD of local files, ENV, ARG and RUN are carried out
// (RUN in the task's own sandbox, offline); CMD, ENTRYPOINT, EXPOSE, LABEL and the like change no
// file and are skipped. Anything else (USER, a URL to ADD, a --from stage) needs Docker, and the
// error says which line. Built images are cached under ~/.cache/durable-cookbook/terminal-images,
// keyed by the Dockerfile and every file of its context, so a task is built once per machine.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, posix, relative, resolve } from 'node:path';
import { cacheRoot } from '../../../../stack/cache.mjs';
import { ConfigurationError } from '../../../errors.js';
import { LocalEpisodeSandbox } from '../../../sandbox/episode.js';
import { shQuote } from '../../../sandbox/file-commands.js';
import { chownTree, AS_NOBODY } from '../../../sandbox/local.js';

/** Bumped when what a build makes of a Dockerfile changes, so cached images are built again. */
const BUILDER_VERSION = 1;

export interface Instruction {
  keyword: string;
  args: string;
  /** 1-based line of the Dockerfile where it starts. */
  line: number;
}

/** The instructions of a Dockerfile: comments dropped, `\` continuations joined. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i];
    if (/^\s*(#|$)/.test(line)) continue;
    while (/\\\s*$/.test(line) && i + 1 < lines.length) {
      line = line.replace(/\\\s*$/, '');
      i++;
      if (/^\s*#/.test(lines[i])) continue; // a comment inside a continued instruction is dropped, as Docker does
      line += '\n' + lines[i];
    }
    const m = /^\s*([A-Za-z]+)\s*(.*)$/s.exec(line);
    if (!m) throw new ConfigurationError(`line ${start + 1}: not an instruction: ${JSON.stringify(line.trim())}`);
    out.push({ keyword: m[1].toUpperCase(), args: m[2].trim(), line: start + 1 });
  }
  return out;
}

/** A JSON array form (`["a", "b"]`), else null. */
function execForm(args: string): string[] | null {
  if (!args.startsWith('[')) return null;
  try {
    const parsed = JSON.parse(args);
    return Array.isArray(parsed) && parsed.every((s) => typeof s === 'string') ? parsed : null;
  } catch {
    return null;
  }
}

/** `$VAR` and `${VAR}` from `vars`, as Docker substitutes them in WORKDIR, COPY, ENV and ARG. */
function substitute(s: string, vars: Record<string, string>): string {
  return s.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_m, braced, _d, fallback, bare) => {
    const name = braced ?? bare;
    return vars[name] ?? fallback ?? '';
  });
}

/** `K=V K2="V 2"` or the legacy `K V` of ENV. */
function keyValues(args: string, legacy: boolean): Array<[string, string]> {
  if (legacy && !/^[A-Za-z_][A-Za-z0-9_]*=/.test(args)) {
    const m = /^(\S+)\s+(.*)$/s.exec(args);
    return m ? [[m[1], m[2]]] : [[args, '']];
  }
  const out: Array<[string, string]> = [];
  const re = /([A-Za-z_][A-Za-z0-9_.-]*)(?:=("(?:[^"\\]|\\.)*"|'[^']*'|\S*))?/g;
  for (let m; (m = re.exec(args)); ) {
    let v = m[2] ?? '';
    if (v.startsWith('"')) v = v.slice(1, -1).replace(/\\(.)/g, '$1');
    else if (v.startsWith("'")) v = v.slice(1, -1);
    out.push([m[1], v]);
  }
  return out;
}

const BASES_WITHOUT_DOCKER = /^(docker\.io\/(library\/)?)?(python|debian|buildpack-deps)(:|@|$)/;
const NO_FILE_CHANGE = new Set(['CMD', 'ENTRYPOINT', 'EXPOSE', 'LABEL', 'MAINTAINER', 'STOPSIGNAL', 'HEALTHCHECK', 'VOLUME', 'ONBUILD']);

export interface BuiltImage {
  /** The root's files, a gzipped tar (episode.ts's snapshot format). */
  snapshot: Buffer;
  /** ENV at the end of the build, which every command of an episode starts with. */
  env: Record<string, string>;
  workdir: string;
}

export interface BuildOptions {
  /** Seconds each RUN may take (task.toml's environment.build_timeout_sec, else 600). */
  timeoutSeconds: number;
  cacheDir?: string;
  log?: (line: string) => void;
}

function contextHash(dockerfile: string, contextDir: string): string {
  const h = createHash('sha256').update(`builder ${BUILDER_VERSION}\n`).update(readFileSync(dockerfile));
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const st = statSync(path);
      h.update(`\n${relative(contextDir, path)} ${st.mode.toString(8)}\n`);
      if (st.isDirectory()) walk(path);
      else h.update(readFileSync(path));
    }
  };
  walk(contextDir);
  return h.digest('hex').slice(0, 32);
}

export const defaultImageCache = () => join(cacheRoot(), 'terminal-images');

/** The image of `environment/` (its Dockerfile and context), from the cache or built now. */
export async function buildTaskImage(envDir: string, opts: BuildOptions): Promise<BuiltImage> {
  const dockerfile = join(envDir, 'Dockerfile');
  const key = contextHash(dockerfile, envDir);
  const cacheDir = opts.cacheDir ?? defaultImageCache();
  const tgz = join(cacheDir, `${key}.tgz`);
  const meta = join(cacheDir, `${key}.json`);
  if (existsSync(tgz) && existsSync(meta)) {
    const { env, workdir } = JSON.parse(readFileSync(meta, 'utf8')) as Omit<BuiltImage, 'snapshot'>;
    return { snapshot: readFileSync(tgz), env, workdir };
  }
  const image = await buildNow(dockerfile, envDir, opts);
  mkdirSync(cacheDir, { recursive: true });
  // Written under temporary names and renamed: a build killed half-way leaves no image behind.
  const tmp = `.${process.pid}.${Date.now()}`;
  writeFileSync(tgz + tmp, image.snapshot);
  writeFileSync(meta + tmp, JSON.stringify({ env: image.env, workdir: image.workdir }));
  renameSync(tgz + tmp, tgz);
  renameSync(meta + tmp, meta);
  return image;
}

async function buildNow(dockerfile: string, contextDir: string, opts: BuildOptions): Promise<BuiltImage> {
  const at = (ins: Instruction) => `${dockerfile}:${ins.line}`;
  const instructions = parseDockerfileAt(dockerfile);
  const sandbox = await LocalEpisodeSandbox.create();
  try {
    const env: Record<string, string> = {};
    const args: Record<string, string> = {};
    let workdir = '/';
    let from = false;
    for (const ins of instructions) {
      const vars = { ...args, ...env };
      switch (ins.keyword) {
        case 'FROM': {
          const image = ins.args.split(/\s+/)[0];
          if (from) throw new ConfigurationError(`${at(ins)}: a multi-stage build needs Docker (start the Docker engine, or keep one FROM)`);
          if (!BASES_WITHOUT_DOCKER.test(substitute(image, args))) {
            throw new ConfigurationError(`${at(ins)}: FROM ${image} needs Docker (without it, the host's Debian stands in for python:* and debian:* images only)`);
          }
          from = true;
          break;
        }
        case 'ARG':
          for (const [k, v] of keyValues(ins.args, false)) if (!(k in args)) args[k] = substitute(v, vars);
          break;
        case 'ENV':
          for (const [k, v] of keyValues(ins.args, true)) env[k] = substitute(v, vars);
          break;
        case 'WORKDIR': {
          workdir = posix.resolve(workdir, substitute(ins.args, vars));
          await mustRun(sandbox, `mkdir -p ${shQuote(workdir)}`, '/', env, opts, at(ins));
          break;
        }
        case 'COPY':
        case 'ADD': {
          const parts = (execForm(ins.args) ?? ins.args.split(/\s+/)).map((p) => substitute(p, vars));
          const flags = parts.filter((p) => p.startsWith('--'));
          const paths = parts.filter((p) => !p.startsWith('--'));
          if (flags.some((f) => f.startsWith('--from'))) throw new ConfigurationError(`${at(ins)}: ${ins.keyword} --from needs Docker`);
          if (paths.length < 2) throw new ConfigurationError(`${at(ins)}: ${ins.keyword} needs a source and a destination`);
          const dest = posix.resolve(workdir, paths.at(-1)!);
          for (const src of paths.slice(0, -1)) {
            if (/^[a-z]+:\/\//.test(src)) throw new ConfigurationError(`${at(ins)}: ${ins.keyword} of a URL needs the network, which a build here does not have`);
            if (/[*?[]/.test(src)) throw new ConfigurationError(`${at(ins)}: ${ins.keyword} with a wildcard (${src}) needs Docker; name the files`);
            copyInto(sandbox.root, resolve(contextDir, src), contextDir, dest, paths.length > 2 || paths.at(-1)!.endsWith('/'), at(ins));
          }
          break;
        }
        case 'RUN': {
          const exec = execForm(ins.args);
          const command = exec ? exec.map(shQuote).join(' ') : ins.args;
          await mustRun(sandbox, command, workdir, { ...args, ...env }, opts, at(ins));
          break;
        }
        default:
          if (NO_FILE_CHANGE.has(ins.keyword)) break;
          throw new ConfigurationError(`${at(ins)}: ${ins.keyword} needs Docker (a build without it carries out FROM, ARG, ENV, WORKDIR, COPY, ADD and RUN)`);
      }
    }
    if (!from) throw new ConfigurationError(`${dockerfile}: no FROM`);
    return { snapshot: await sandbox.snapshot({ zeroTimes: true }), env, workdir };
  } finally {
    await sandbox.cleanup();
  }
}

function parseDockerfileAt(dockerfile: string): Instruction[] {
  try {
    return parseDockerfile(readFileSync(dockerfile, 'utf8'));
  } catch (e) {
    throw e instanceof ConfigurationError ? new ConfigurationError(`${dockerfile}: ${e.message}`) : e;
  }
}

async function mustRun(sandbox: LocalEpisodeSandbox, command: string, workdir: string, env: Record<string, string>, opts: BuildOptions, where: string): Promise<void> {
  const exports = Object.entries(env).map(([k, v]) => `export ${k}=${shQuote(v)}; `).join('');
  const r = await sandbox.runCommand(exports + command, { workdir, timeout: opts.timeoutSeconds, maxOutputBytes: 64 * 1024 });
  opts.log?.(`${where}: exit ${r.exitCode}`);
  if (r.exitCode !== 0) throw new ConfigurationError(`${where}: the build step failed (exit ${r.exitCode}): ${(r.stderr || r.stdout).trim().slice(-2000)}`);
}

/** Docker's COPY: a file to `dest` (or into it, when it is a folder or ends in /), a folder's contents into `dest`. */
function copyInto(root: string, src: string, contextDir: string, dest: string, destIsDir: boolean, where: string): void {
  if (relative(contextDir, src).startsWith('..')) throw new ConfigurationError(`${where}: ${src} is outside the build context ${contextDir}`);
  if (!existsSync(src)) throw new ConfigurationError(`${where}: ${relative(contextDir, src) || '.'} is not in the build context ${contextDir}`);
  const target = join(root, dest);
  if (statSync(src).isDirectory()) {
    mkdirSync(target, { recursive: true });
    cpSync(src, target, { recursive: true, preserveTimestamps: false });
  } else {
    const into = destIsDir || (existsSync(target) && statSync(target).isDirectory());
    const file = into ? join(target, posix.basename(src)) : target;
    mkdirSync(into ? target : join(file, '..'), { recursive: true });
    cpSync(src, file);
  }
  if (AS_NOBODY) chownTree(join(root, dest.split('/').filter(Boolean)[0] ?? ''), 65534);
}
