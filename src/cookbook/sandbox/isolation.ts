// How the local sandbox isolates untrusted code, with only what a Debian machine has (util-linux's
// unshare, setpriv and prlimit; no bubblewrap, nsjail or Docker needed, none of which CI can be
// assumed to have). Namespaces are the kernel mechanism those tools use themselves, and a run costs
// one unshare (~0.15 s) instead of a container start:
//
// - user namespace: the code is "root" only inside it; on the host it is the caller's user, or
//   nobody (65534) when the caller is root, so even an escape meets ordinary file permissions and
//   RLIMIT_NPROC (which the kernel never enforces on host root) bounds it;
// - network namespace: only a loopback device that is down — no network, not even the host's
//   localhost;
// - pid namespace: the code sees only its own processes, and killing the namespace's first process
//   kills every process in it, so nothing outlives a run (a fork bomb included);
// - mount namespace: a fresh root on a small tmpfs with /usr (and the interpreter's prefix when it
//   lives elsewhere) bound read-only, /dev/{null,zero,random,urandom}, its own /proc, and writable
//   tmpfs /sandbox (the working directory, with the request's files) and /tmp, both size-capped.
//   After pivot_root the host's tree is unmounted: /root, /home, /etc and ~/.ssh do not exist there;
// - rlimits (prlimit): CPU seconds, address space, processes, file size, open files, no core dumps;
//   then setpriv drops every capability and sets no_new_privs before the code starts. They bound
//   each process alone; local.ts holds a run's processes together to its limits with a cgroup.
//
// Wall time and output size are enforced by the caller (local.ts), which kills the namespace;
// coreutils' timeout inside is the backstop should the caller die first.
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { SandboxUnavailableError } from './types.js';

export interface IsolationLimits {
  cpuSeconds: number;
  memoryBytes: number;
  maxProcesses: number;
  maxFileBytes: number;
  maxOpenFiles: number;
  /** Size of each writable tmpfs (/sandbox, /tmp). */
  scratchBytes: number;
}

// Runs inside the namespaces as their root. $1: staging dir (files/ in it, root/ the mountpoint of
// the new root), $2: extra read-only prefix or "", $3: tmpfs size, $4: wall-time backstop in seconds
// (the caller kills the namespace at the wall time; this holds should the caller itself die), $5…:
// prlimit options, "--", command.
// The shell stays as the namespace's first process and writes the code's exit status (128 + signal
// for a signal, as sh reports it) to fd 3, which the code does not get: unshare's own status cannot
// carry a signal death (util-linux 2.38 fails to re-raise it).
export const SETUP_FAILED = 'sandbox-init: setup failed';
const INNER = String.raw`set -eu
trap 'echo "${SETUP_FAILED}" >&2' EXIT
STAGE=$1; EXTRA=$2; SCRATCH=$3; BACKSTOP=$4; shift 4
R="$STAGE/root"
mount -t tmpfs -o size=1m,mode=755 tmpfs "$R"
robind() { mkdir -p "$R$1"; mount --rbind "$1" "$R$1"; mount -o remount,bind,ro "$R$1"; }
robind /usr
[ -n "$EXTRA" ] && robind "$EXTRA"
for l in bin sbin lib lib32 lib64 libx32; do if [ -L "/$l" ]; then ln -s "$(readlink "/$l")" "$R/$l"; elif [ -d "/$l" ]; then robind "/$l"; fi; done
mkdir -p "$R/dev" "$R/tmp" "$R/sandbox" "$R/proc"
for n in null zero random urandom; do touch "$R/dev/$n"; mount --bind "/dev/$n" "$R/dev/$n"; done
mount -t tmpfs -o "size=$SCRATCH,mode=1777" tmpfs "$R/tmp"
mount -t tmpfs -o "size=$SCRATCH,mode=755" tmpfs "$R/sandbox"
cp -R "$STAGE/files/." "$R/sandbox/"
mount -t proc proc "$R/proc" 2>/dev/null || true
cd "$R"
mkdir .old
pivot_root . .old
umount -l /.old
rmdir /.old
mount -o remount,bind,ro /
cd /sandbox
export HOME=/sandbox TMPDIR=/tmp PATH=/usr/local/bin:/usr/bin:/bin
trap - EXIT
set +e
timeout --signal=KILL "$BACKSTOP" setpriv --inh-caps=-all --bounding-set=-all --no-new-privs prlimit "$@" 3>&-
echo "$?" >&3
`;

/**
 * Processes of the run beside its code (unshare, which enters the user namespace it makes, the
 * namespace's shell and the wall-time backstop): RLIMIT_NPROC
 * counts them too, so the limit is the code's processes plus these.
 */
export const NAMESPACE_TASKS = 3;

const TOOLS = ['unshare', 'setpriv', 'prlimit', 'pivot_root', 'mount', 'umount', 'timeout'];

function which(cmd: string): string | null {
  for (const dir of (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':').concat(['/usr/sbin', '/sbin'])) {
    if (dir && existsSync(`${dir}/${cmd}`)) return `${dir}/${cmd}`;
  }
  return null;
}

/** The prlimit options of `limits`. */
function rlimitOptions(limits: IsolationLimits): string[] {
  return [
    // SIGXCPU at the limit (a clear cause), SIGKILL a second later for code that ignores it.
    `--cpu=${Math.max(1, Math.ceil(limits.cpuSeconds))}:${Math.max(1, Math.ceil(limits.cpuSeconds)) + 1}`,
    `--as=${limits.memoryBytes}`,
    `--nproc=${limits.maxProcesses + NAMESPACE_TASKS}`,
    `--fsize=${limits.maxFileBytes}`,
    `--nofile=${limits.maxOpenFiles}`,
    '--core=0',
  ];
}

/** unshare into fresh namespaces (as nobody when we are root), running `script` with `args` there. */
function inNamespaces(script: string, args: string[]): string[] {
  const asNobody = process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
  return [...asNobody, 'unshare', '--user', '--map-root-user', '--net', '--pid', '--fork', '--mount', '--kill-child', 'sh', '-c', script, 'sandbox-init', ...args];
}

const backstop = (wallSeconds: number) => String(Math.ceil(wallSeconds) + 2);

/** The argv that runs `command` isolated; `stage` holds files/ and an empty root/. */
export function isolatedArgv(stage: string, command: string[], limits: IsolationLimits, extraReadOnly: string | null, wallSeconds: number): string[] {
  return inNamespaces(INNER, [stage, extraReadOnly ?? '', String(limits.scratchBytes), backstop(wallSeconds), ...rlimitOptions(limits), '--', ...command]);
}

/** Null when util-linux's tools are on this host, else which are missing. */
export function missingTools(): string | null {
  if (process.platform !== 'linux') return `the local sandbox needs Linux namespaces; this is ${process.platform}`;
  const missing = TOOLS.filter((t) => !which(t));
  return missing.length ? `the local sandbox needs util-linux's ${missing.join(', ')} (Debian packages util-linux, mount and coreutils)` : null;
}

/** The error for a host whose kernel refused the namespaces (the probe's output says how). */
export function namespacesRefused(output: string): string {
  return (
    `the local sandbox needs unprivileged user namespaces with mount rights, which this host refuses (${output.trim() || 'no output'}); ` +
    'enable them (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), ' +
    'or point SANDBOX_URL at a SandboxFusion server'
  );
}

/**
 * The interpreter to run inside, and the prefix to bind read-only when it lives outside /usr (a
 * pyenv or hosted-toolcache Python): /usr/bin/python3 when present, else python3 on PATH.
 */
export function pythonInterpreter(): { path: string; extraReadOnly: string | null } {
  if (existsSync('/usr/bin/python3')) return { path: '/usr/bin/python3', extraReadOnly: null };
  const found = which('python3');
  if (!found) throw new SandboxUnavailableError('the local sandbox runs Python code with python3, which is not on this host');
  const r = spawnSync(found, ['-c', 'import sys; print(sys.executable); print(sys.base_prefix)'], { encoding: 'utf8' });
  const [exe, prefix] = r.stdout.trim().split('\n');
  const real = realpathSync(exe);
  return { path: real, extraReadOnly: real.startsWith('/usr/') ? null : realpathSync(prefix) };
}

// The stateful variant (terminal tasks): the new root is not a fresh tmpfs but a host folder that
// holds one episode's files and outlives each command, so what one command writes the next one
// finds — anywhere in the tree, as in a container — while /usr and the libraries stay the host's,
// read-only, and everything else of the isolation above holds. $1: staging dir (its root/ is the
// mountpoint), $2: extra read-only prefix or "", $3: the episode's root folder, $4: working
// directory inside, made when missing, $5: wall-time backstop in seconds, $6…: prlimit options, "--",
// command. What the shell adds to the root to mount on (usr, dev, proc, the library links) is
// left out of the episode's snapshots (episode.ts).
const INNER_EPISODE = String.raw`set -eu
trap 'echo "${SETUP_FAILED}" >&2' EXIT
STAGE=$1; EXTRA=$2; ROOTDIR=$3; WORKDIR=$4; BACKSTOP=$5; shift 5
R="$STAGE/root"
mount --bind "$ROOTDIR" "$R"
robind() { mkdir -p "$R$1"; mount --rbind "$1" "$R$1"; mount -o remount,bind,ro "$R$1"; }
robind /usr
[ -n "$EXTRA" ] && robind "$EXTRA"
for l in bin sbin lib lib32 lib64 libx32; do if [ -L "/$l" ]; then [ -L "$R/$l" ] || ln -s "$(readlink "/$l")" "$R/$l"; elif [ -d "/$l" ]; then robind "/$l"; fi; done
# Debian's alternatives (awk, editor, …) are links through /etc/alternatives: only those links, read-only.
[ -d /etc/alternatives ] && robind /etc/alternatives
mkdir -p "$R/dev" "$R/tmp" "$R/proc" "$R/root"
chmod 1777 "$R/tmp"
for n in null zero random urandom; do [ -e "$R/dev/$n" ] || touch "$R/dev/$n"; mount --bind "/dev/$n" "$R/dev/$n"; done
mount -t proc proc "$R/proc" 2>/dev/null || true
mkdir -p "$R$WORKDIR"
cd "$R"
mkdir -p .old
pivot_root . .old
umount -l /.old
rmdir /.old
cd "$WORKDIR"
trap - EXIT
set +e
timeout --signal=KILL "$BACKSTOP" setpriv --inh-caps=-all --bounding-set=-all --no-new-privs prlimit "$@" 3>&-
echo "$?" >&3
`;

/** The argv that runs `command` in the episode root `rootDir` (writable, kept between commands); `stage` holds an empty root/. */
export function episodeIsolatedArgv(stage: string, rootDir: string, workdir: string, command: string[], limits: IsolationLimits, extraReadOnly: string | null, wallSeconds: number): string[] {
  return inNamespaces(INNER_EPISODE, [stage, extraReadOnly ?? '', rootDir, workdir, backstop(wallSeconds), ...rlimitOptions(limits), '--', ...command]);
}
