// Linux /proc readers: a process's stat fields, the TCP sockets listening on a port, and the
// sockets a process group holds. Elsewhere (macOS) they answer undefined and callers do without.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * The fields of /proc/<pid>/stat after the command name (field 3, the state, first): the name
 * (field 2) may hold spaces and parentheses, so fields are counted after its closing one.
 */
export function procStat(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

const LISTEN = '0A';
/**
 * Local addresses whose listener takes a port from one on 127.0.0.1, as /proc/net/tcp{,6} print
 * them: 127.0.0.1, 0.0.0.0, :: (dual stack) and ::ffff:127.0.0.1. A listener on another address
 * (::1, 10.0.0.2) neither stops a bind to 127.0.0.1 nor answers its connections.
 */
const CLASHING_ADDRESSES = new Set(['0100007F', '00000000', '0'.repeat(32), '0000000000000000FFFF00000100007F']);

/**
 * The socket inodes listening on each port where they clash with 127.0.0.1 (see above); undefined
 * where /proc/net/tcp cannot be read (not Linux).
 */
export function listeningInodes(ports: number[]): Map<number, string[]> | undefined {
  const rows: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    try {
      rows.push(...readFileSync(file, 'utf8').split('\n').slice(1));
    } catch {
      if (file === '/proc/net/tcp') return undefined; // tcp6 is missing where IPv6 is off
    }
  }
  const found = new Map<number, string[]>(ports.map((p) => [p, []]));
  for (const row of rows) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
    const [, local, , state, , , , , , inode] = row.trim().split(/\s+/);
    if (state !== LISTEN || !local) continue;
    const [address, portHex] = local.split(':');
    const listeners = found.get(parseInt(portHex, 16));
    if (listeners && CLASHING_ADDRESSES.has(address)) listeners.push(inode);
  }
  return found;
}

/** The socket inodes held by the processes of a process group (fds this user may read). */
export function groupSocketInodes(pgid: number): Set<string> {
  const inodes = new Set<string>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return inodes;
  }
  for (const pid of pids) {
    if (procStat(Number(pid))?.[2] !== String(pgid)) continue; // field 5: the process group
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone meanwhile
    }
    for (const fd of fds) {
      try {
        const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (socket) inodes.add(socket[1]);
      } catch {
        // closed meanwhile
      }
    }
  }
  return inodes;
}
