// forward/forward_backward chunking (§5.3). Chunking is a pure function of the data and the
// negotiated limits, so a retried call splits the same way and reuses exactly the same seq ids.
import type { Datum, TensorData } from './types.js';

function base64Length(b64: string): number {
  const clean = b64.replace(/[^A-Za-z0-9+/=_-]/g, '');
  const pad = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.floor((clean.length * 3) / 4) - pad;
}

function tensorBytes(t: TensorData): number {
  return t.data.length * (t.dtype === 'int64' ? 8 : 4);
}

/** SDK 0.25 estimate: 4 B per text token, raw bytes of images, nbytes of each loss tensor. */
export function estimateDatumBytes(d: Datum): number {
  let bytes = 0;
  for (const c of d.model_input.chunks) {
    bytes += c.type === 'encoded_text' ? c.tokens.length * 4 : base64Length(c.data);
  }
  for (const t of Object.values(d.loss_fn_inputs)) bytes += tensorBytes(t);
  return bytes;
}

/**
 * Split in order: a chunk is closed when it holds `maxLen` datums or when the next datum would
 * push it past `maxBytes` (a single oversized datum still gets a chunk of its own).
 */
export function chunkData(data: readonly Datum[], maxLen: number, maxBytes: number): Datum[][] {
  const chunks: Datum[][] = [];
  let current: Datum[] = [];
  let bytes = 0;
  for (const d of data) {
    const size = estimateDatumBytes(d);
    if (current.length > 0 && (current.length >= maxLen || bytes + size > maxBytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(d);
    bytes += size;
  }
  if (current.length) chunks.push(current);
  return chunks;
}
