// The reference does its training-side math on `torch.tensor(python_list)`, whose default dtype is
// float32. The spec (numerics note) pins those values as float32 with every operation rounded and
// sums accumulated left to right, so these helpers are the only place that arithmetic lives.

export const f32 = Math.fround;

/** Σ xs in float32, accumulated left to right. */
export function sumF32(xs: readonly number[]): number {
  let acc = 0;
  for (const x of xs) acc = f32(acc + f32(x));
  return acc;
}

/** Σ a_i·b_i in float32 (each product rounded, then accumulated left to right). */
export function dotF32(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) {
    throw new Error(`dotF32: length mismatch ${a.length} vs ${b.length}`);
  }
  let acc = 0;
  for (let i = 0; i < a.length; i++) acc = f32(acc + f32(f32(a[i]) * f32(b[i])));
  return acc;
}

/** Element-wise float32 rounding of a list. */
export function toF32Array(xs: readonly number[]): number[] {
  return xs.map((x) => f32(x));
}
