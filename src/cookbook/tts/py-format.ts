// Python's fixed-point float formatting (`f"{x:.{d}f}"`) and `round(x, d)`: both round the
// double's exact binary value to d decimals, ties to even. JS `toFixed` rounds ties away from zero
// and switches to exponent notation from 1e21, so neither can stand in for them.

/** |x| as digits / 10**scale, exactly (x finite). */
function exactDecimal(x: number): { digits: bigint; scale: number } {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(x));
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const exponent = (biased === 0 ? 1 : biased) - 1075;
  if (exponent >= 0) return { digits: mantissa << BigInt(exponent), scale: 0 };
  return { digits: mantissa * 5n ** BigInt(-exponent), scale: -exponent };
}

/** `f"{x:.{decimals}f}"` (the sign of -0.0 and of negatives rounding to zero kept, as Python does). */
export function pyFixed(x: number, decimals: number): string {
  if (Number.isNaN(x)) return 'nan';
  const negative = x < 0 || Object.is(x, -0);
  if (!Number.isFinite(x)) return negative ? '-inf' : 'inf';
  const { digits, scale } = exactDecimal(x);
  let scaled: bigint;
  if (scale <= decimals) {
    scaled = digits * 10n ** BigInt(decimals - scale);
  } else {
    const unit = 10n ** BigInt(scale - decimals);
    const q = digits / unit;
    const twice = (digits % unit) * 2n;
    scaled = twice > unit || (twice === unit && q % 2n === 1n) ? q + 1n : q;
  }
  const text = scaled.toString().padStart(decimals + 1, '0');
  const body = decimals === 0 ? text : `${text.slice(0, -decimals)}.${text.slice(-decimals)}`;
  return negative ? `-${body}` : body;
}

/** `round(x, ndigits)` on a float. */
export function pyRoundTo(x: number, ndigits: number): number {
  if (!Number.isFinite(x)) return x;
  return Number(pyFixed(x, ndigits));
}
