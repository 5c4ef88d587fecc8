// Damage a file on disk in place, as bit rot would: one bit flipped, size and inode unchanged.
import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';

/** Flips the bits of `mask` in the byte at `offset` (default: 3 bytes before the end, in tensor data). */
export function flipBit(file: string, offset?: number, mask = 0x20): void {
  const fd = openSync(file, 'r+');
  try {
    const at = offset ?? fstatSync(fd).size - 3;
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, at);
    b[0] ^= mask;
    writeSync(fd, b, 0, 1, at);
  } finally {
    closeSync(fd);
  }
}
