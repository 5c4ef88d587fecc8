// What a terminal_bench row carries (reference 0.6.1 eval/benchmarks/_terminal_bench.py
// _parse_task): the task folder as a gzip'd tar, read as Python's tarfile reads it (ustar and
// GNU/pax long names, regular files only), and task.yaml's top-level `instruction`, read as
// PyYAML's safe_load reads the forms task files write it in (a plain, quoted or block scalar).
import { gunzipSync } from 'node:zlib';

const BLOCK = 512;

/** A NUL-terminated header field as text. */
function field(header: Buffer, start: number, length: number): string {
  const raw = header.subarray(start, start + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end === -1 ? raw.length : end).toString('utf8');
}

/** A numeric header field: octal digits, or base-256 when its first byte's high bit is set (tarfile's nti). */
function numberField(header: Buffer, start: number, length: number): number {
  const raw = header.subarray(start, start + length);
  if (raw[0] & 0x80) {
    let n = raw[0] & 0x3f;
    for (let i = 1; i < raw.length; i++) n = n * 256 + raw[i];
    return raw[0] & 0x40 ? -n : n;
  }
  const text = field(header, start, length).trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new Error(`invalid header number ${JSON.stringify(text)}`);
  return parseInt(text, 8);
}

/** A pax header's records: "<length> <key>=<value>\n" each. */
function paxRecords(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    if (space === -1) break;
    const length = Number(data.subarray(at, space).toString('ascii'));
    if (!Number.isInteger(length) || length <= 0) throw new Error('invalid pax header');
    const record = data.subarray(space + 1, at + length - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq > 0) out.set(record.slice(0, eq), record.slice(eq + 1));
    at += length;
  }
  return out;
}

/** Python's tarfile REGULAR_TYPES: what member.isfile() accepts. */
const REGULAR = new Set(['0', '\0', '7', 'S']);

export interface TarFile {
  /** The member's name as tarfile gives it. */
  name: string;
  data: Buffer;
}

/** The regular files of an uncompressed tar, in archive order; throws where tarfile's open would. */
export function tarFiles(tar: Buffer): TarFile[] {
  const out: TarFile[] = [];
  const globalPax = new Map<string, string>();
  let longName: string | null = null;
  let pax = new Map<string, string>();
  let at = 0;
  while (at + BLOCK <= tar.length) {
    const header = tar.subarray(at, at + BLOCK);
    if (header.every((b) => b === 0)) break;
    let checksum = 0;
    for (let i = 0; i < BLOCK; i++) checksum += i >= 148 && i < 156 ? 0x20 : header[i];
    if (checksum !== numberField(header, 148, 8)) throw new Error(`bad checksum in the tar header at byte ${at}`);
    const type = String.fromCharCode(header[156]);
    const size = numberField(header, 124, 12);
    const dataStart = at + BLOCK;
    const data = tar.subarray(dataStart, dataStart + size);
    if (data.length < size) throw new Error('unexpected end of data');
    at = dataStart + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'L') {
      longName = field(data, 0, data.length);
      continue;
    }
    if (type === 'x' || type === 'g') {
      const records = paxRecords(data);
      if (type === 'g') for (const [k, v] of records) globalPax.set(k, v);
      else pax = records;
      continue;
    }
    const prefix = header.subarray(257, 263).toString('latin1') === 'ustar\0' ? field(header, 345, 155) : '';
    let name = field(header, 0, 100);
    if (prefix) name = `${prefix}/${name}`;
    name = pax.get('path') ?? longName ?? globalPax.get('path') ?? name;
    longName = null;
    pax = new Map();
    // tarfile: an old-style regular entry named with a trailing slash is a directory.
    if (type === '\0' && name.endsWith('/')) continue;
    if (REGULAR.has(type)) out.push({ name, data: Buffer.from(data) });
  }
  return out;
}

/** Python's bytes.decode('utf-8', errors='replace'). */
const decodeReplacing = (b: Uint8Array) => new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(b);

/** Python's str.lstrip(chars). */
const lstripChars = (s: string, chars: string) => {
  let i = 0;
  while (i < s.length && chars.includes(s[i])) i++;
  return s.slice(i);
};

export interface TaskArchive {
  /** run-tests.sh's text (the last one named so), or '' when there is none. */
  testScript: string;
  /** Every regular file but solution*, by its name less leading '.' and '/' (the last of a name wins). */
  setupFiles: Map<string, string>;
  /** Why the archive could not be read (the reference logs it and goes on without files). */
  error: string | null;
}

/** The row's `archive` as the reference reads it: bytes(archive_data), gunzipped, untarred. */
export function readTaskArchive(archive: unknown): TaskArchive {
  const setupFiles = new Map<string, string>();
  let testScript = '';
  try {
    const raw = archiveBytes(archive);
    for (const { name: member, data } of tarFiles(gunzipSync(raw))) {
      const name = lstripChars(member, './');
      const content = decodeReplacing(data);
      if (name === 'run-tests.sh' || name.endsWith('/run-tests.sh')) testScript = content;
      // A name seen before keeps its first place, as in a Python dict.
      if (!name.startsWith('solution')) setupFiles.set(name, content);
    }
    return { testScript, setupFiles, error: null };
  } catch (e) {
    return { testScript: '', setupFiles: new Map(), error: (e as Error).message };
  }
}

/** Python's bytes(x) of what a row's reader gives: bytes as they are, a list of byte values; else TypeError. */
function archiveBytes(x: unknown): Buffer {
  if (x instanceof Uint8Array) return Buffer.from(x);
  if (Array.isArray(x)) {
    if (!x.every((v) => Number.isInteger(v) && v >= 0 && v < 256)) throw new Error('bytes must be in range(0, 256)');
    return Buffer.from(x as number[]);
  }
  if (typeof x === 'string') throw new Error('string argument without an encoding');
  throw new Error(`cannot convert '${x === null ? 'NoneType' : typeof x}' object to bytes`);
}
