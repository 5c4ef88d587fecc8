#!/usr/bin/env node
// Developer aid: checks the Harbor-format terminal tasks under data/terminal_tasks (or --dir)
// without the project's sandbox. For each task it checks the layout (instruction.md, task.toml's
// fields, the Dockerfile subset, tests/ as UTF-8 text), then twice builds a throwaway root
// filesystem from environment/Dockerfile and runs the verifier in it:
//   1. tests/test.sh on the freshly built root         -> the reward must be 0
//   2. solution/solve.sh (working dir /app), then test.sh -> the reward must be 1
// A root is a temp directory with the host's /usr and /etc/alternatives bound read-only (bin, lib,
// lib64, sbin as on the host), a minimal /etc, private /dev nodes, /proc and /tmp; commands run
// chrooted into it inside a new mount and pid namespace (`unshare`), so nothing is mounted or
// written outside the temp directory. Run it as root, or as a user allowed unprivileged user
// namespaces (it then adds --user --map-root-user).
//
//   node scripts/check-terminal-tasks.mjs                 # every task
//   node scripts/check-terminal-tasks.mjs set-ini-key ... # only these
//   node scripts/check-terminal-tasks.mjs --dir ~/.cache/harbor/tasks/mine
//   node scripts/check-terminal-tasks.mjs fix-off-by-one --try 'echo "print(10)" > /app/script.py'
//       (runs these commands, from /, as the agent would, instead of solve.sh, and prints the reward:
//       does a wrong answer earn 0?)
//
// data/terminal_tasks/README.md describes the layout and the Dockerfile subset checked here.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const BASE_IMAGE = 'python:3.11-slim-bookworm';
// What the python base image and Docker put in every container's environment.
const BASE_ENV = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', HOME: '/root' };
const HOST_TOP_DIRS = ['bin', 'lib', 'lib64', 'sbin'];
const DEVICES = ['null', 'zero', 'random', 'urandom', 'full'];

function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      dir: { type: 'string', default: join(repo, 'data', 'terminal_tasks') },
      try: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log('usage: node scripts/check-terminal-tasks.mjs [--dir TASKS_DIR] [--try COMMANDS] [TASK_NAME...]');
    return Promise.resolve(0);
  }
  const tasksDir = resolve(values.dir);
  const all = readdirSync(tasksDir).filter((name) => statSync(join(tasksDir, name)).isDirectory()).sort();
  const unknown = positionals.filter((name) => !all.includes(name));
  if (unknown.length > 0) throw new Error(`no task named ${unknown.join(', ')} in ${tasksDir}`);
  const names = positionals.length > 0 ? positionals : all;
  return values.try === undefined ? checkAll(tasksDir, names) : tryAll(tasksDir, names, values.try);
}

async function tryAll(tasksDir, names, command) {
  for (const name of names) {
    const taskDir = join(tasksDir, name);
    const problems = checkLayout(taskDir);
    if (problems.length > 0) throw new Error(`${name}: ${problems.join('; ')}`);
    const dockerfile = join(taskDir, 'environment', 'Dockerfile');
    const steps = parseDockerfile(readFileSync(dockerfile, 'utf8'), dockerfile);
    const out = await episode(taskDir, steps, taskTimeouts(readToml(join(taskDir, 'task.toml'))), { solve: { argv: ['bash', '-c', command], cwd: '/', label: '--try' } });
    console.log(`${name}: reward ${out.problem ? `none (${out.problem})` : out.reward}\n${out.log ?? ''}`);
  }
  return 0;
}

async function checkAll(tasksDir, names) {
  const shown = relative(process.cwd(), tasksDir);
  console.log(`check-terminal-tasks: ${names.length} task(s) in ${shown.startsWith('..') ? tasksDir : shown || '.'}`);
  const width = Math.max(...names.map((n) => n.length));
  let failed = 0;
  for (const name of names) {
    const started = Date.now();
    const problems = await checkTask(join(tasksDir, name));
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    if (problems.length === 0) {
      console.log(`  ok    ${name.padEnd(width)}  reward 0 before the solution, 1 after  (${secs} s)`);
    } else {
      failed += 1;
      console.log(`  FAIL  ${name.padEnd(width)}  (${secs} s)`);
      for (const p of problems) console.log(`          ${p.replace(/\n/g, '\n          ')}`);
    }
  }
  console.log(`${names.length - failed} of ${names.length} task(s) ok`);
  return failed === 0 ? 0 : 1;
}

async function checkTask(taskDir) {
  const problems = checkLayout(taskDir);
  if (problems.length > 0) return problems;
  const dockerfile = join(taskDir, 'environment', 'Dockerfile');
  let steps;
  try {
    steps = parseDockerfile(readFileSync(dockerfile, 'utf8'), dockerfile);
  } catch (err) {
    return [err.message];
  }
  const timeouts = taskTimeouts(readToml(join(taskDir, 'task.toml')));
  const before = await episode(taskDir, steps, timeouts, { solve: null });
  if (before.problem) problems.push(`before the solution: ${before.problem}`);
  else if (before.reward !== 0) problems.push(`before the solution the reward is ${before.reward}, expected 0\n${before.log}`);
  const after = await episode(taskDir, steps, timeouts, { solve: { argv: ['bash', '/solution/solve.sh'], cwd: '/app', label: 'solve.sh' } });
  if (after.problem) problems.push(`with the solution: ${after.problem}`);
  else if (after.reward !== 1) problems.push(`after the solution the reward is ${after.reward}, expected 1\n${after.log}`);
  return problems;
}

// ---- layout and task.toml

function checkLayout(taskDir) {
  const problems = [];
  for (const rel of ['instruction.md', 'task.toml', 'environment/Dockerfile', 'tests/test.sh', 'solution/solve.sh']) {
    if (!existsSync(join(taskDir, rel))) problems.push(`missing ${rel}`);
  }
  if (problems.length > 0) return problems;
  if (readFileSync(join(taskDir, 'instruction.md'), 'utf8').trim() === '') problems.push('instruction.md is empty');
  // The verifier's files are uploaded as text (the reference reads them with read_text).
  for (const file of filesUnder(join(taskDir, 'tests'))) {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(file));
    } catch {
      problems.push(`${relative(taskDir, file)} is not UTF-8 text`);
    }
  }
  let toml;
  try {
    toml = readToml(join(taskDir, 'task.toml'));
  } catch (err) {
    return [...problems, err.message];
  }
  const need = (path, ok, what) => {
    const value = path.split('.').reduce((v, k) => (v == null ? undefined : v[k]), toml);
    if (!ok(value)) problems.push(`task.toml: ${path} must be ${what} (is ${JSON.stringify(value)})`);
  };
  const positive = (v) => typeof v === 'number' && v > 0;
  const text = (v) => typeof v === 'string' && v.trim() !== '';
  need('version', (v) => v === '1.0', '"1.0"');
  need('metadata.author_name', text, 'a name');
  need('metadata.difficulty', (v) => ['easy', 'medium', 'hard'].includes(v), '"easy", "medium" or "hard"');
  need('metadata.category', text, 'a category');
  need('metadata.tags', (v) => Array.isArray(v) && v.length > 0 && v.every(text), 'a list of tags');
  for (const path of ['verifier.timeout_sec', 'agent.timeout_sec', 'environment.build_timeout_sec', 'environment.cpus', 'environment.memory_mb', 'environment.storage_mb']) {
    need(path, positive, 'a positive number');
  }
  return problems;
}

// Node has no TOML parser; the host's python3 (3.11+) has tomllib.
function readToml(file) {
  const out = spawnSync('python3', ['-c', 'import json, sys, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], "rb"))))', file], { encoding: 'utf8' });
  if (out.error) throw new Error(`cannot run python3 to read ${file}: ${out.error.message}`);
  if (out.status !== 0) throw new Error(`${file} does not parse as TOML: ${out.stderr.trim().split('\n').pop()}`);
  return JSON.parse(out.stdout);
}

function taskTimeouts(toml) {
  return { buildSec: toml.environment.build_timeout_sec, agentSec: toml.agent.timeout_sec, verifierSec: toml.verifier.timeout_sec };
}

// ---- the Dockerfile subset: FROM (the one base), WORKDIR, COPY, RUN (shell form), ENV KEY=value

function parseDockerfile(text, file) {
  const steps = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    let line = lines[i];
    if (/^\s*(#|$)/.test(line)) continue;
    while (/\\\s*$/.test(line) && i + 1 < lines.length) {
      i += 1;
      if (/^\s*#/.test(lines[i])) continue; // Docker drops comment lines inside a continuation
      line = line.replace(/\\\s*$/, ' ') + lines[i];
    }
    const where = `${file}:${lineNo}`;
    const match = /^\s*([A-Za-z]+)\s+(.*\S)\s*$/.exec(line);
    if (!match) throw new Error(`${where}: cannot read the instruction ${JSON.stringify(line.trim())}`);
    const op = match[1].toUpperCase();
    const arg = match[2];
    if (steps.length === 0 && op !== 'FROM') throw new Error(`${where}: the first instruction must be FROM ${BASE_IMAGE}`);
    if (op === 'FROM') {
      if (steps.length > 0) throw new Error(`${where}: only one FROM is allowed`);
      if (arg !== BASE_IMAGE) throw new Error(`${where}: the base image must be ${BASE_IMAGE}, not ${arg}`);
      steps.push({ op, where });
    } else if (op === 'WORKDIR') {
      steps.push({ op, where, path: arg });
    } else if (op === 'RUN') {
      if (arg.startsWith('[') || arg.startsWith('--')) throw new Error(`${where}: only the shell form of RUN, without flags, is allowed`);
      steps.push({ op, where, command: arg });
    } else if (op === 'COPY') {
      if (arg.startsWith('[') || arg.startsWith('--')) throw new Error(`${where}: only COPY <src...> <dest>, without flags, is allowed`);
      const parts = arg.split(/\s+/);
      if (parts.length < 2) throw new Error(`${where}: COPY needs a source and a destination`);
      const sources = parts.slice(0, -1);
      for (const src of sources) {
        if (/[*?[]/.test(src) || posix.isAbsolute(src) || posix.normalize(src).startsWith('..')) {
          throw new Error(`${where}: COPY source ${src} must be a plain path inside environment/`);
        }
      }
      steps.push({ op, where, sources, dest: parts.at(-1) });
    } else if (op === 'ENV') {
      const vars = [];
      const pair = /\s*([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)/y;
      while (pair.lastIndex < arg.length) {
        const m = pair.exec(arg);
        if (!m) throw new Error(`${where}: ENV must be KEY=value pairs (a value with spaces in double quotes)`);
        vars.push([m[1], m[2].startsWith('"') ? m[2].slice(1, -1).replace(/\\(.)/g, '$1') : m[2]]);
      }
      steps.push({ op, where, vars });
    } else {
      throw new Error(`${where}: ${op} is not in the allowed subset (FROM, WORKDIR, COPY, RUN, ENV)`);
    }
  }
  if (steps.length === 0) throw new Error(`${file}: empty Dockerfile`);
  return steps;
}

// ---- building a root and running commands in it

function makeRoot() {
  const root = mkdtempSync(join(tmpdir(), 'check-terminal-tasks-'));
  for (const d of ['usr', 'dev', 'proc', 'root', 'etc', 'logs']) mkdirSync(join(root, d));
  mkdirSync(join(root, 'tmp'));
  chmodSync(join(root, 'tmp'), 0o1777);
  // /etc/alternatives too: awk, nawk and which in /usr/bin are links through it, as in the base image.
  mkdirSync(join(root, 'etc', 'alternatives'));
  const bound = ['usr', 'etc/alternatives'];
  for (const d of HOST_TOP_DIRS) {
    const host = `/${d}`;
    if (!existsSync(host)) continue;
    const st = lstatSync(host);
    if (st.isSymbolicLink()) {
      symlinkSync(readlinkSync(host), join(root, d));
    } else {
      mkdirSync(join(root, d));
      bound.push(d);
    }
  }
  for (const dev of DEVICES) writeFileSync(join(root, 'dev', dev), '');
  symlinkSync('/proc/self/fd', join(root, 'dev', 'fd'));
  ['stdin', 'stdout', 'stderr'].forEach((name, fd) => symlinkSync(`/proc/self/fd/${fd}`, join(root, 'dev', name)));
  writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n');
  writeFileSync(join(root, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n');
  writeFileSync(join(root, 'etc', 'hosts'), '127.0.0.1 localhost\n');
  return { path: root, bound };
}

// The mounts live only in the namespace, which dies with the command; refuse to delete a root that
// still has anything mounted under it rather than recurse into the host's /usr.
function removeRoot(root) {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8');
  if (mounts.includes(` ${root.path}/`)) throw new Error(`${root.path} still has mounts; not removing it`);
  rmSync(root.path, { recursive: true, force: true });
}

const SETUP = `
set -e
root=$1; cwd=$2; shift 2
envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
IFS=, read -ra bound <<< "$BOUND"
for d in "\${bound[@]}"; do
  mount --bind "/$d" "$root/$d"
  mount -o remount,bind,ro "$root/$d"
done
for dev in ${DEVICES.join(' ')}; do mount --bind "/dev/$dev" "$root/dev/$dev"; done
mount -t proc proc "$root/proc"
exec chroot "$root" /usr/bin/env -i "\${envs[@]}" /bin/bash -c 'cd "$1" && shift && exec "$@"' cd "$cwd" "$@"
`;

function runInRoot(root, { cwd, env, argv, timeoutSec }) {
  const user = process.getuid() === 0 ? [] : ['--user', '--map-root-user'];
  const envPairs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const args = [...user, '--mount', '--pid', '--fork', '--kill-child', '--propagation', 'private', 'bash', '-c', SETUP, 'setup', root.path, cwd, ...envPairs, '--', ...argv];
  return new Promise((resolveRun) => {
    const child = spawn('unshare', args, { env: { PATH: process.env.PATH, BOUND: root.bound.join(',') }, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout.on('data', (d) => (log += d));
    child.stderr.on('data', (d) => (log += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutSec * 1000);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolveRun({ code: 127, log: `cannot start unshare: ${err.message}`, timedOut: false });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolveRun({ code: code ?? 128, log, timedOut: signal === 'SIGKILL' });
    });
  });
}

async function build(root, envDir, steps, timeoutSec) {
  let workdir = '/';
  const env = { ...BASE_ENV };
  const inRoot = (p) => join(root.path, posix.resolve(workdir, p));
  for (const step of steps) {
    if (step.op === 'WORKDIR') {
      workdir = posix.resolve(workdir, step.path);
      mkdirSync(inRoot('.'), { recursive: true });
    } else if (step.op === 'ENV') {
      for (const [k, v] of step.vars) env[k] = v;
    } else if (step.op === 'COPY') {
      const intoDir = step.dest.endsWith('/') || step.sources.length > 1 || (existsSync(inRoot(step.dest)) && statSync(inRoot(step.dest)).isDirectory());
      for (const src of step.sources) {
        const from = join(envDir, src);
        if (!existsSync(from)) throw new Error(`${step.where}: COPY source ${src} is not in environment/`);
        if (statSync(from).isDirectory()) {
          cpSync(from, inRoot(step.dest), { recursive: true }); // a directory's contents, as Docker does
        } else {
          const to = intoDir ? join(inRoot(step.dest), posix.basename(src)) : inRoot(step.dest);
          mkdirSync(dirname(to), { recursive: true });
          cpSync(from, to);
        }
      }
    } else if (step.op === 'RUN') {
      const out = await runInRoot(root, { cwd: workdir, env, argv: ['/bin/sh', '-c', step.command], timeoutSec });
      if (out.code !== 0) throw new Error(`${step.where}: RUN exited with ${out.timedOut ? 'a timeout' : out.code}\n${tail(out.log)}`);
    }
  }
  return env;
}

async function episode(taskDir, steps, timeouts, { solve }) {
  const root = makeRoot();
  try {
    let env;
    try {
      env = await build(root, join(taskDir, 'environment'), steps, timeouts.buildSec);
    } catch (err) {
      return { problem: `the build failed: ${err.message}` };
    }
    let log = '';
    if (solve) {
      cpSync(join(taskDir, 'solution'), join(root.path, 'solution'), { recursive: true });
      mkdirSync(join(root.path, 'app'), { recursive: true });
      const out = await runInRoot(root, { cwd: solve.cwd, env, argv: solve.argv, timeoutSec: timeouts.agentSec });
      log += `${solve.label} (exit ${out.timedOut ? 'timeout' : out.code}):\n${tail(out.log)}\n`;
    }
    // As the reference grader does: tests uploaded after the episode, /logs/verifier made, test.sh run from /root.
    cpSync(join(taskDir, 'tests'), join(root.path, 'tests'), { recursive: true });
    mkdirSync(join(root.path, 'logs', 'verifier'), { recursive: true });
    const out = await runInRoot(root, { cwd: '/root', env, argv: ['bash', '/tests/test.sh'], timeoutSec: timeouts.verifierSec });
    log += `test.sh (exit ${out.timedOut ? 'timeout' : out.code}):\n${tail(out.log)}`;
    return { reward: readReward(join(root.path, 'logs', 'verifier')), log };
  } finally {
    removeRoot(root);
  }
}

// reward.txt first, then reward.json's "reward", as the reference's HarborReward; none is 0.
function readReward(dir) {
  const txt = join(dir, 'reward.txt');
  if (existsSync(txt) && readFileSync(txt, 'utf8').trim() !== '') return Number(readFileSync(txt, 'utf8').trim());
  const json = join(dir, 'reward.json');
  if (existsSync(json) && readFileSync(json, 'utf8').trim() !== '') return Number(JSON.parse(readFileSync(json, 'utf8')).reward ?? 0);
  return 0;
}

function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

function tail(text, lines = 15) {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(`check-terminal-tasks: ${err.message}`);
      process.exit(2);
    },
  );
}
