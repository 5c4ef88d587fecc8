// Little-endian packing of numeric arrays for the protobuf dialect (§8: every numeric payload in a
// `bytes` field is a packed little-endian array). DataView keeps this correct on any host and
// tolerates unaligned input buffers (protobufjs hands out sub-arrays of the message buffer).

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function checkMultiple(bytes: Uint8Array, width: number, what: string): void {
  if (bytes.byteLength % width !== 0) {
    throw new RangeError(`${what}: ${bytes.byteLength} bytes is not a multiple of ${width}`);
  }
}

export function packInt32(values: readonly number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const dv = view(out);
  values.forEach((v, i) => dv.setInt32(i * 4, v, true));
  return out;
}

export function packFloat32(values: readonly number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const dv = view(out);
  values.forEach((v, i) => dv.setFloat32(i * 4, v, true));
  return out;
}

export function packInt64(values: readonly number[]): Uint8Array {
  const out = new Uint8Array(values.length * 8);
  const dv = view(out);
  values.forEach((v, i) => {
    if (!Number.isSafeInteger(v)) throw new RangeError(`int64 value ${v} is not a safe integer`);
    dv.setBigInt64(i * 8, BigInt(v), true);
  });
  return out;
}

export function unpackInt32(bytes: Uint8Array): number[] {
  checkMultiple(bytes, 4, 'int32 array');
  const dv = view(bytes);
  const out = new Array<number>(bytes.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = dv.getInt32(i * 4, true);
  return out;
}

export function unpackFloat32(bytes: Uint8Array): number[] {
  checkMultiple(bytes, 4, 'float32 array');
  const dv = view(bytes);
  const out = new Array<number>(bytes.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = dv.getFloat32(i * 4, true);
  return out;
}

export function unpackInt64(bytes: Uint8Array): number[] {
  checkMultiple(bytes, 8, 'int64 array');
  const dv = view(bytes);
  const out = new Array<number>(bytes.byteLength / 8);
  for (let i = 0; i < out.length; i++) out[i] = Number(dv.getBigInt64(i * 8, true));
  return out;
}

/** bfloat16 is the upper half of a float32; the SDK widens it to float32 (response_conv.py). */
export function unpackBfloat16(bytes: Uint8Array): number[] {
  checkMultiple(bytes, 2, 'bfloat16 array');
  const dv = view(bytes);
  const scratch = new DataView(new ArrayBuffer(4));
  const out = new Array<number>(bytes.byteLength / 2);
  for (let i = 0; i < out.length; i++) {
    scratch.setUint32(0, dv.getUint16(i * 2, true) << 16, true);
    out[i] = scratch.getFloat32(0, true);
  }
  return out;
}
