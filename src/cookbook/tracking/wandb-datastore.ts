// wandb's record stream file (`run-<id>.wandb`), the file `wandb sync` replays: LevelDB's log
// format with wandb's file header. The file starts with a 7-byte header (":W&B", the magic 0xBEE1
// as uint16 LE, version 0) and is cut into 32 KiB blocks; each record is one or more fragments
// `crc32(type byte ‖ data) uint32 LE, length uint16 LE, type uint8 (FULL 1, FIRST 2, MIDDLE 3,
// LAST 4), data`, a fragment never crossing a block, and a block tail too short for a fragment
// header is zero padding. The checksum is zlib's CRC-32 (not LevelDB's masked CRC-32C).
//
// Appends are exactly-once across crashes: a cursor beside the run (`{offset, records, …}`) is
// saved, atomically, only after the appended bytes were fsynced; reopening truncates whatever lies
// past it (a fragment torn by a kill, or a whole batch whose cursor was not saved, to be written
// again), so wandb's reader never meets a torn record and never sees a record twice.
import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { writeFileAtomic } from '../run-store-integrity.js';

export const BLOCK_BYTES = 32 * 1024;
const HEADER_BYTES = 7;
const FULL = 1;
const FIRST = 2;
const MIDDLE = 3;
const LAST = 4;

/** The file header: ident ":W&B", magic 0xBEE1, version 0. */
export function fileHeader(): Buffer {
  const h = Buffer.alloc(HEADER_BYTES);
  h.write(':W&B', 0, 'latin1');
  h.writeUInt16LE(0xbee1, 4);
  h.writeUInt8(0, 6);
  return h;
}

function fragment(type: number, data: Buffer): Buffer {
  const h = Buffer.alloc(HEADER_BYTES);
  h.writeUInt32LE(crc32(data, crc32(Buffer.of(type))) >>> 0, 0);
  h.writeUInt16LE(data.length, 4);
  h.writeUInt8(type, 6);
  return Buffer.concat([h, data]);
}

/** The bytes that store `data` as one record when the file currently ends at `offset`. */
export function frameRecord(data: Buffer, offset: number): Buffer {
  const out: Buffer[] = [];
  let left = BLOCK_BYTES - (offset % BLOCK_BYTES);
  if (left < HEADER_BYTES) {
    out.push(Buffer.alloc(left));
    left = BLOCK_BYTES;
  }
  if (data.length + HEADER_BYTES <= left) return Buffer.concat([...out, fragment(FULL, data)]);
  let used = left - HEADER_BYTES;
  out.push(fragment(FIRST, data.subarray(0, used)));
  // Every following fragment starts a block; all but the last fill it.
  while (data.length - used > BLOCK_BYTES - HEADER_BYTES) {
    out.push(fragment(MIDDLE, data.subarray(used, used + BLOCK_BYTES - HEADER_BYTES)));
    used += BLOCK_BYTES - HEADER_BYTES;
  }
  out.push(fragment(LAST, data.subarray(used)));
  return Buffer.concat(out);
}

export interface StreamCursor {
  /** Bytes of the file that are committed. */
  offset: number;
  /** Records committed (wandb numbers records from 1, so the next one is `records + 1`). */
  records: number;
  /** The last history step committed (−1: none). */
  lastStep: number;
  finished: boolean;
}

export class RecordStreamError extends Error {
  constructor(file: string, reason: string) {
    super(`${file}: ${reason}`);
    this.name = 'RecordStreamError';
  }
}

export class RecordStream {
  constructor(
    readonly file: string,
    private readonly cursorFile: string,
  ) {}

  cursor(): StreamCursor | undefined {
    return existsSync(this.cursorFile) ? (JSON.parse(readFileSync(this.cursorFile, 'utf8')) as StreamCursor) : undefined;
  }

  /**
   * Appends records (protobuf-encoded by `encode`, given the `num` of the first) after the
   * committed end, dropping anything a crash left past it, fsyncs, then commits the cursor with
   * `patch`. Creates the file, header first, when there is no cursor yet.
   */
  append(encode: (firstNum: number) => Buffer[], patch: Partial<Pick<StreamCursor, 'lastStep' | 'finished'>> = {}): StreamCursor {
    const current = this.cursor();
    const base: StreamCursor = current ?? { offset: 0, records: 0, lastStep: -1, finished: false };
    const exists = existsSync(this.file);
    if (current && !exists) throw new RecordStreamError(this.file, `missing, but ${this.cursorFile} says ${current.offset} bytes were written; remove both to write the stream again`);
    const size = exists ? statSync(this.file).size : 0;
    if (size < base.offset) throw new RecordStreamError(this.file, `${size} bytes, shorter than the ${base.offset} committed ones (${this.cursorFile}): the file was truncated or replaced`);
    const chunks: Buffer[] = [];
    let end = base.offset;
    if (end === 0) {
      chunks.push(fileHeader());
      end = HEADER_BYTES;
    }
    const records = encode(base.records + 1);
    for (const data of records) {
      const framed = frameRecord(data, end);
      chunks.push(framed);
      end += framed.length;
    }
    const fd = openSync(this.file, exists ? 'r+' : 'w');
    try {
      // Whatever lies past the committed end was written by an append whose cursor never landed.
      if (size > base.offset) ftruncateSync(fd, base.offset);
      const bytes = Buffer.concat(chunks);
      for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off, bytes.length - off, base.offset + off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    const next: StreamCursor = { ...base, ...patch, offset: end, records: base.records + records.length };
    writeFileAtomic(this.cursorFile, JSON.stringify(next));
    return next;
  }
}
