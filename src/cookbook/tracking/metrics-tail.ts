// metrics.jsonl read from where the last sync stopped, so mirroring a run costs O(new rows) per
// step rather than re-reading (and re-checking) the whole file every step. The cursor
// (`.cookbook/tracking/metrics-read.json`) remembers the file's inode, how many committed lines
// and bytes were read, the last line's checksum, its step, and the summary folded so far.
//
// Only committed lines are read: those the run store's line records (`.cookbook/sums/metrics.jsonl.sums`,
// one 81-byte `<end offset> <sha256>` per line) cover, each checked against its record, so a
// torn or unrecorded tail is left for a later sync exactly as the full reader leaves it. Anything
// the cursor cannot vouch for falls back to the full, checked read: no cursor; a rewrite (a
// restore replacing rows renames a new file into place: another inode, or a rewrite in flight);
// the record at the cursor not ending where, or hashing as, the line read there did; or a sink
// that holds fewer steps than were read (a different destination, `cookbook track` after an
// offline run).
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RunStore } from '../run-store.js';
import { parseJsonLine, sumsPath, writeFileAtomic } from '../run-store-integrity.js';
import { summaryOf } from './wandb-format.js';

const RECORD_BYTES = 81;

interface ReadCursor {
  ino: number;
  lines: number;
  offset: number;
  lastHash: string;
  lastStep: number;
  summary: Record<string, unknown>;
}

export interface MetricsRead {
  /** Rows not read before (all rows after a fallback), ascending by step. */
  rows: Array<Record<string, unknown>>;
  /** The summary (last value of every key) over every row of the file. */
  summary: Record<string, unknown>;
  /** Whether the whole file was read. */
  full: boolean;
  /** Records the read as the new cursor: call once what the rows were for is done. */
  commit(): void;
}

function readRange(file: string, position: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  const fd = openSync(file, 'r');
  try {
    let got = 0;
    while (got < length) {
      const n = readSync(fd, buf, got, length - got, position + got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface LineRecord {
  end: number;
  hash: string;
}

function parseRecords(data: Buffer): LineRecord[] | undefined {
  const out: LineRecord[] = [];
  for (let i = 0; i + RECORD_BYTES <= data.length; i += RECORD_BYTES) {
    const m = /^(\d{15}) ([0-9a-f]{64})\n$/.exec(data.subarray(i, i + RECORD_BYTES).toString('latin1'));
    if (!m) return undefined;
    out.push({ end: Number(m[1]), hash: m[2] });
  }
  return out;
}

export class MetricsTail {
  private readonly file: string;
  private readonly sums: string;
  private readonly cursorFile: string;

  constructor(private readonly logPath: string) {
    this.file = join(logPath, 'metrics.jsonl');
    this.sums = sumsPath(logPath, this.file, '.sums');
    this.cursorFile = join(logPath, '.cookbook', 'tracking', 'metrics-read.json');
  }

  private cursor(): ReadCursor | undefined {
    try {
      return existsSync(this.cursorFile) ? (JSON.parse(readFileSync(this.cursorFile, 'utf8')) as ReadCursor) : undefined;
    } catch {
      return undefined; // a cache: a damaged one is a full read
    }
  }

  /** The rows since the cursor, given the last step the destination already holds. */
  read(sinkLastStep: number): MetricsRead {
    return this.readFrom(this.cursor(), sinkLastStep) ?? this.readAll();
  }

  private readFrom(c: ReadCursor | undefined, sinkLastStep: number): MetricsRead | undefined {
    if (!c || sinkLastStep < c.lastStep || !existsSync(this.file) || !existsSync(this.sums) || existsSync(`${this.sums}.next`)) return undefined;
    const st = statSync(this.file);
    if (st.ino !== c.ino || st.size < c.offset) return undefined;
    const recordsBytes = statSync(this.sums).size;
    if (recordsBytes < c.lines * RECORD_BYTES) return undefined;
    if (c.lines > 0) {
      const at = parseRecords(readRange(this.sums, (c.lines - 1) * RECORD_BYTES, RECORD_BYTES));
      if (!at || at[0]?.end !== c.offset || at[0].hash !== c.lastHash) return undefined;
    }
    const records = parseRecords(readRange(this.sums, c.lines * RECORD_BYTES, Math.floor(recordsBytes / RECORD_BYTES) * RECORD_BYTES - c.lines * RECORD_BYTES));
    if (!records) return undefined;
    const end = records.at(-1)?.end ?? c.offset;
    const data = readRange(this.file, c.offset, end - c.offset);
    if (data.length !== end - c.offset) return undefined;
    const rows: Array<Record<string, unknown>> = [];
    let start = 0;
    let lastHash = c.lastHash;
    for (const [i, r] of records.entries()) {
      const line = data.subarray(start, r.end - c.offset);
      if (line.length === 0 || line[line.length - 1] !== 0x0a) return undefined;
      const text = line.subarray(0, line.length - 1);
      if (sha256(text) !== r.hash) return undefined; // the full read names the damaged line
      if (text.toString('utf8').trim() !== '') rows.push(parseJsonLine(this.file, c.lines + i + 1, text.toString('utf8')) as Record<string, unknown>);
      start = r.end - c.offset;
      lastHash = r.hash;
    }
    const lastStep = rows.length ? Number(rows.at(-1)!.step) : c.lastStep;
    // New rows' values win over the folded ones: the last value of every key.
    const next: ReadCursor = { ino: c.ino, lines: c.lines + records.length, offset: end, lastHash, lastStep, summary: { ...c.summary, ...summaryOf(rows) } };
    return { rows, summary: next.summary, full: false, commit: () => writeFileAtomic(this.cursorFile, JSON.stringify(next)) };
  }

  private readAll(): MetricsRead {
    // Inode and records before the read: if a rewrite lands meanwhile, the next sync sees another inode.
    const ino = existsSync(this.file) ? statSync(this.file).ino : -1;
    const records = existsSync(this.sums) && !existsSync(`${this.sums}.next`) ? parseRecords(readFileSync(this.sums)) : undefined;
    const rows = new RunStore(this.logPath).readMetrics();
    const summary = summaryOf(rows);
    const last = records?.at(-1);
    const consistent = ino !== -1 && records !== undefined && statSync(this.file).ino === ino;
    const cursor: ReadCursor | undefined = consistent && records ? { ino, lines: records.length, offset: last?.end ?? 0, lastHash: last?.hash ?? '', lastStep: rows.length ? Number(rows.at(-1)!.step) : -1, summary } : undefined;
    return { rows, summary, full: true, commit: () => cursor && writeFileAtomic(this.cursorFile, JSON.stringify(cursor)) };
  }
}
