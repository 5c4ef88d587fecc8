// Damage detection and crash-safe writes for the files of a run directory (run-store.ts).
//
// The files keep the reference's formats byte for byte; what they were written as is recorded
// beside them, under `.cookbook/sums/`:
//
// - A JSONL file (metrics.jsonl, checkpoints.jsonl) has `<name>.sums`: one fixed-width record per
//   line, `<byte offset where the line ends, 15 digits> <sha256 of the line>\n`. An append writes
//   and fsyncs the line, then its record: a line without a record is an append cut short (by a
//   crash or a full disk), not yet committed — readers skip it and the next write removes it, as
//   it removes a torn, newline-less tail. A file shorter than its records say (truncated), a line
//   whose bytes changed (bit flip, edit) or lines nobody recorded are refused, naming file and line.
//   A rewrite (rows replaced after a restore) writes the new records to `<name>.sums.next`, then
//   the file (temp + fsync + rename), then renames the records into place; a crash in between
//   leaves either state readable, and the next write settles it.
// - Any other file (config.json, .cookbook/run.json, blobs, rollout records, iteration files) has
//   `<name>.sha256`: the sha256 and size of its content, and of the content it replaces until that
//   replacement is done (the record is written before the file's atomic rename).
//
// Files without records (written before this existed, or by hand) are read as they are. Writes
// that the filesystem refuses fail with RunStoreWriteError naming the file and the errno (ENOSPC
// for a full disk); nothing half-written is left where a reader would take it for data.
import { closeSync, existsSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join, relative, sep } from 'node:path';

const RECORD_BYTES = 81; // 15-digit offset, space, 64 hex digits, newline
const OFFSET_DIGITS = 15;
const NEWLINE = 0x0a;

/** A run-store file whose bytes are not what was written: names the file (and line, for JSONL). */
export class RunStoreDamagedError extends Error {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    reason: string,
  ) {
    super(`${file}${line === undefined ? '' : `:${line}`}: damaged: ${reason}; it was not read`);
    this.name = 'RunStoreDamagedError';
  }
}

/** A write the filesystem refused (ENOSPC above all); retrying once the cause is gone succeeds. */
export class RunStoreWriteError extends Error {
  /** What the filesystem said, once (without "could not write …"). */
  readonly detail: string;
  constructor(
    readonly file: string,
    readonly code: string,
    cause: unknown,
    /** The file the filesystem refused, when it is the record kept for `file`. */
    readonly via?: string,
  ) {
    // Node's own messages already start with the code ("EACCES: permission denied, open …"): say it once.
    const message = cause instanceof RunStoreWriteError ? cause.detail : String((cause as Error)?.message ?? cause);
    const what = code === 'ENOSPC' ? 'no space left on device (ENOSPC)' : code === 'EDQUOT' ? 'disk quota exceeded (EDQUOT)' : message.startsWith(`${code}:`) ? message : `${code}: ${message}`;
    super(`could not write ${file}: ${what}${via ? ` (writing its record ${via})` : ''}; the run store is as it was before this write`);
    this.detail = what;
    this.name = 'RunStoreWriteError';
  }
}

/** Runs a write of `file`, reporting a refused write of its record as a write of `file`. */
function writing<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof RunStoreWriteError && err.file !== file) throw new RunStoreWriteError(file, err.code, err, err.file);
    throw err;
  }
}

function writeError(file: string, err: unknown): unknown {
  if (err instanceof RunStoreWriteError || err instanceof RunStoreDamagedError) return err;
  const code = (err as NodeJS.ErrnoException)?.code;
  return code ? new RunStoreWriteError(file, code, err) : err;
}

const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest('hex');

function writeAll(fd: number, data: Buffer): void {
  for (let off = 0; off < data.length; ) off += writeSync(fd, data, off, data.length - off);
}

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function truncateQuietly(file: string, size: number): void {
  try {
    if (existsSync(file) && statSync(file).size > size) {
      const fd = openSync(file, 'r+');
      try {
        ftruncateSync(fd, size);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
  } catch {
    // Left as a tail no record covers: readers skip it and the next write removes it.
  }
}

/** Temp file in the same directory, fsync, rename, fsync of the directory; no temp file is left behind. */
export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  let fd: number | undefined;
  try {
    mkdirSync(dirname(path), { recursive: true });
    fd = openSync(tmp, 'w');
    writeAll(fd, typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (err) {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      // never created
    }
    throw writeError(path, err);
  }
  fsyncDir(dirname(path));
}

function appendDurably(file: string, data: Buffer): void {
  const before = existsSync(file) ? statSync(file).size : 0;
  let fd: number | undefined;
  try {
    mkdirSync(dirname(file), { recursive: true });
    fd = openSync(file, 'a');
    writeAll(fd, data);
    fsyncSync(fd);
  } catch (err) {
    if (fd !== undefined) {
      closeSync(fd);
      fd = undefined;
    }
    truncateQuietly(file, before);
    throw writeError(file, err);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The lines of a file as byte ranges: complete (newline-terminated) lines and a torn tail. */
function splitLines(data: Buffer): { lines: Array<{ text: Buffer; end: number }>; tornTail: boolean } {
  const lines: Array<{ text: Buffer; end: number }> = [];
  let start = 0;
  for (;;) {
    const nl = data.indexOf(NEWLINE, start);
    if (nl === -1) break;
    lines.push({ text: data.subarray(start, nl), end: nl + 1 });
    start = nl + 1;
  }
  return { lines, tornTail: start < data.length };
}

interface LineRecord {
  end: number;
  hash: string;
}

function parseRecords(data: Buffer, file: string): LineRecord[] {
  const n = Math.floor(data.length / RECORD_BYTES); // a torn last record is an append cut short
  const out: LineRecord[] = [];
  for (let i = 0; i < n; i++) {
    const rec = data.subarray(i * RECORD_BYTES, (i + 1) * RECORD_BYTES).toString('latin1');
    const m = /^(\d{15}) ([0-9a-f]{64})\n$/.exec(rec);
    if (!m) throw new RunStoreDamagedError(file, i + 1, 'not a line record');
    out.push({ end: Number(m[1]), hash: m[2] });
  }
  return out;
}

const record = (end: number, hash: string) => `${String(end).padStart(OFFSET_DIGITS, '0')} ${hash}\n`;

/** Where the records of `file` (a path inside `root`) live. */
export function sumsPath(root: string, file: string, suffix: '.sums' | '.sha256'): string {
  let rel = relative(root, file);
  const cookbook = `.cookbook${sep}`;
  if (rel.startsWith(cookbook)) rel = rel.slice(cookbook.length);
  return join(root, '.cookbook', 'sums', `${rel}${suffix}`);
}

/**
 * The committed lines of `data` checked against `records`; throws RunStoreDamagedError naming the
 * first line that differs. At most one line past the records is tolerated (an append whose record
 * was not written yet) and skipped, as is a torn last line — unless `exact`.
 */
function checkLines(file: string, data: Buffer, records: LineRecord[], exact = false): Buffer[] {
  const { lines, tornTail } = splitLines(data);
  if (exact && (tornTail || lines.length !== records.length)) {
    throw new RunStoreDamagedError(file, Math.min(lines.length, records.length) + 1, 'the file is not the one the records describe');
  }
  const n = Math.min(lines.length, records.length);
  for (let i = 0; i < n; i++) {
    if (lines[i].end !== records[i].end) {
      throw new RunStoreDamagedError(file, i + 1, `the line ends at byte ${lines[i].end}, it was written to end at byte ${records[i].end}`);
    }
    if (sha256(lines[i].text) !== records[i].hash) {
      throw new RunStoreDamagedError(file, i + 1, 'the line does not match the checksum recorded when it was written');
    }
  }
  if (lines.length < records.length) {
    throw new RunStoreDamagedError(file, lines.length + 1, `the file is truncated: ${records.length} lines were written, ${lines.length} remain intact (${data.length} of ${records[records.length - 1].end} bytes)`);
  }
  if (lines.length > records.length + 1) {
    throw new RunStoreDamagedError(file, records.length + 2, 'lines the run store never wrote follow its last recorded line');
  }
  return lines.slice(0, records.length).map((l) => l.text);
}

/** A JSONL file of the run store with per-line records. */
export class CheckedJsonl {
  readonly sums: string;
  readonly next: string;

  constructor(
    readonly root: string,
    readonly file: string,
  ) {
    this.sums = sumsPath(root, file, '.sums');
    this.next = `${this.sums}.next`;
  }

  /** The committed lines (text, no newline), checked; a file without records is read as it is. */
  readLines(): string[] {
    try {
      return this.readLinesOnce();
    } catch (err) {
      // A writer in another process may have replaced file and records between our two reads:
      // damage is what a second, fresh read still finds.
      if (!(err instanceof RunStoreDamagedError)) throw err;
      return this.readLinesOnce();
    }
  }

  private readLinesOnce(): string[] {
    if (!existsSync(this.file)) return [];
    const data = readFileSync(this.file);
    if (existsSync(this.next)) {
      try {
        return checkLines(this.file, data, parseRecords(readFileSync(this.next), this.next), true).map((b) => b.toString('utf8'));
      } catch {
        // the rewrite did not reach the file: the committed records still describe it
      }
    }
    if (!existsSync(this.sums)) return legacyLines(this.file, data);
    return checkLines(this.file, data, parseRecords(readFileSync(this.sums), this.sums)).map((b) => b.toString('utf8'));
  }

  /** The last committed line, from the tail (files that grow every step are not read whole). */
  lastLine(): string | undefined {
    if (existsSync(this.next)) return this.readLines().pop();
    if (!existsSync(this.file) || statSync(this.file).size === 0) return undefined;
    if (!existsSync(this.sums)) return legacyLines(this.file, readFileSync(this.file)).pop();
    const records = Math.floor(statSync(this.sums).size / RECORD_BYTES);
    if (records === 0) return undefined;
    const tail = readRange(this.sums, (records - 1) * RECORD_BYTES, RECORD_BYTES);
    const [last] = parseRecords(tail, this.sums);
    const prevEnd = records > 1 ? parseRecords(readRange(this.sums, (records - 2) * RECORD_BYTES, RECORD_BYTES), this.sums)[0].end : 0;
    const text = readRange(this.file, prevEnd, last.end - prevEnd);
    if (text.length !== last.end - prevEnd || text[text.length - 1] !== NEWLINE || sha256(text.subarray(0, text.length - 1)) !== last.hash) {
      throw new RunStoreDamagedError(this.file, records, 'the line does not match the checksum recorded when it was written');
    }
    return text.subarray(0, text.length - 1).toString('utf8');
  }

  /** Appends one line (data first, then its record, each fsynced). */
  append(line: string): void {
    writing(this.file, () => this.appendLine(line));
  }

  private appendLine(line: string): void {
    this.settleState();
    const before = existsSync(this.file) ? statSync(this.file).size : 0;
    const bytes = Buffer.from(line + '\n', 'utf8');
    appendDurably(this.file, bytes);
    try {
      appendDurably(this.sums, Buffer.from(record(before + bytes.length, sha256(bytes.subarray(0, bytes.length - 1))), 'latin1'));
    } catch (err) {
      truncateQuietly(this.file, before);
      throw err;
    }
  }

  /** Replaces the whole file (records first as `.next`, then the file, then the records). */
  rewrite(lines: string[]): void {
    writing(this.file, () => this.rewriteLines(lines));
  }

  private rewriteLines(lines: string[]): void {
    this.settleState();
    const content = lines.map((l) => l + '\n').join('');
    let end = 0;
    const records = lines
      .map((l) => {
        const bytes = Buffer.from(l, 'utf8');
        end += bytes.length + 1;
        return record(end, sha256(bytes));
      })
      .join('');
    writeFileAtomic(this.next, records);
    try {
      writeFileAtomic(this.file, content);
    } catch (err) {
      try {
        unlinkSync(this.next);
      } catch {
        // settled by the next write
      }
      throw err;
    }
    try {
      renameSync(this.next, this.sums);
    } catch (err) {
      throw writeError(this.sums, err);
    }
    fsyncDir(dirname(this.sums));
  }

  /**
   * Brings the file and its records to one committed state before a write: finishes or drops an
   * interrupted rewrite, removes an append cut short, starts records for a file that has none.
   * Throws RunStoreDamagedError for damage (a write must not build on it).
   */
  settle(): void {
    writing(this.file, () => this.settleState());
  }

  private settleState(): void {
    if (existsSync(this.next)) {
      let done = false;
      try {
        checkLines(this.file, existsSync(this.file) ? readFileSync(this.file) : Buffer.alloc(0), parseRecords(readFileSync(this.next), this.next), true);
        done = true;
      } catch {
        done = false;
      }
      if (done) {
        try {
          renameSync(this.next, this.sums);
        } catch (err) {
          throw writeError(this.sums, err);
        }
      } else unlinkSync(this.next);
    }
    if (!existsSync(this.sums)) {
      if (!existsSync(this.file)) return;
      // Written before records existed (or by hand): record what is there, if it reads.
      const data = readFileSync(this.file);
      const { lines, tornTail } = splitLines(data);
      lines.forEach((l, i) => parseJsonLine(this.file, i + 1, l.text.toString('utf8')));
      if (tornTail) truncateQuietly(this.file, lines.length ? lines[lines.length - 1].end : 0);
      writeFileAtomic(this.sums, lines.map((l) => record(l.end, sha256(l.text))).join(''));
      return;
    }
    const sumsSize = statSync(this.sums).size;
    if (sumsSize % RECORD_BYTES !== 0) truncateQuietly(this.sums, sumsSize - (sumsSize % RECORD_BYTES));
    const count = Math.floor(sumsSize / RECORD_BYTES);
    const lastEnd = count === 0 ? 0 : parseRecords(readRange(this.sums, (count - 1) * RECORD_BYTES, RECORD_BYTES), this.sums)[0].end;
    const size = existsSync(this.file) ? statSync(this.file).size : 0;
    if (size > lastEnd) truncateQuietly(this.file, lastEnd); // an append cut short: never committed
    else if (size < lastEnd) checkLines(this.file, existsSync(this.file) ? readFileSync(this.file) : Buffer.alloc(0), parseRecords(readFileSync(this.sums), this.sums));
  }
}

function readRange(file: string, position: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  const fd = openSync(file, 'r');
  try {
    const n = readSync(fd, buf, 0, length, position);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** Lines of a file without records: complete lines, and a last line only if it is whole JSON. */
function legacyLines(file: string, data: Buffer): string[] {
  const text = data.toString('utf8');
  const parts = text.split('\n');
  const tail = parts.pop()!; // '' when the file ends with a newline
  const lines = parts.filter((l) => l.trim() !== '');
  if (tail.trim() !== '') {
    try {
      JSON.parse(jsonText(tail));
      lines.push(tail);
    } catch {
      // a torn last line (an append cut short): not data
    }
  }
  return lines;
}

/** JSON of the reference's writer may hold NaN/Infinity (Python json.dumps); read them as null. */
export const jsonText = (line: string) => line.replace(/\bNaN\b/g, 'null').replace(/-?\bInfinity\b/g, 'null');

/** One line as JSON, or RunStoreDamagedError naming file and line. */
export function parseJsonLine(file: string, line: number | undefined, text: string): unknown {
  try {
    return JSON.parse(jsonText(text));
  } catch (err) {
    throw new RunStoreDamagedError(file, line, `not valid JSON (${(err as Error).message})`);
  }
}

/** A whole file of the run store with a sha256 record (written before the file's atomic rename). */
export class CheckedFile {
  readonly sums: string;

  constructor(
    readonly root: string,
    readonly file: string,
  ) {
    this.sums = sumsPath(root, file, '.sha256');
  }

  /** The file's bytes, checked against its record (a file without one is read as it is). */
  read(): Buffer {
    const data = readFileSync(this.file);
    const accepted = this.accepted();
    if (accepted === undefined) return data;
    const digest = sha256(data);
    if (!accepted.some((a) => a.hash === digest && a.size === data.length)) {
      const want = accepted[0];
      throw new RunStoreDamagedError(this.file, undefined, data.length !== want.size
        ? `${data.length} bytes where ${want.size} were written (truncated or overwritten)`
        : `its content does not match the checksum recorded when it was written (sha256 ${digest.slice(0, 16)}…, recorded ${want.hash.slice(0, 16)}…)`);
    }
    return data;
  }

  write(data: string | Uint8Array): void {
    writing(this.file, () => this.writeBytes(data));
  }

  private writeBytes(data: string | Uint8Array): void {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const digest = sha256(bytes);
    // The content being replaced stays acceptable until the rename below has happened.
    let previous: { hash: string; size: number } | undefined;
    if (existsSync(this.file)) {
      const current = readFileSync(this.file);
      const accepted = this.accepted();
      const currentHash = sha256(current);
      if (accepted === undefined || accepted.some((a) => a.hash === currentHash)) previous = { hash: currentHash, size: current.length };
      if (currentHash === digest && accepted?.[0]?.hash === digest) return; // already written (a retried write)
    }
    const lines = [`${digest} ${bytes.length}`];
    if (previous && previous.hash !== digest) lines.push(`${previous.hash} ${previous.size}`);
    writeFileAtomic(this.sums, lines.join('\n') + '\n');
    writeFileAtomic(this.file, bytes);
  }

  private accepted(): Array<{ hash: string; size: number }> | undefined {
    if (!existsSync(this.sums)) return undefined;
    const text = readFileSync(this.sums, 'latin1');
    const out: Array<{ hash: string; size: number }> = [];
    for (const line of text.split('\n')) {
      const m = /^([0-9a-f]{64}) (\d+)$/.exec(line);
      if (m) out.push({ hash: m[1], size: Number(m[2]) });
      else if (line !== '') throw new RunStoreDamagedError(this.sums, undefined, 'not a checksum record');
    }
    if (out.length === 0) throw new RunStoreDamagedError(this.sums, undefined, 'an empty checksum record');
    return out;
  }
}
