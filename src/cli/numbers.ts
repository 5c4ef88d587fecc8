// Numbers as the CLI shows them to people (status, progress, summaries): a float32 metric's noise
// (`16.000001`) and negative zero (`-0.000000`) are not shown. Files keep the reference's formatting.

/** `significant` digits, trailing zeros dropped, exponent form for the very small and very large. */
export function formatNumber(x: number, significant = 6): string {
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return '0'; // and -0
  if (Number.isInteger(x)) return String(x); // counts stay exact
  const abs = Math.abs(x);
  if (abs < 1e-4 || abs >= 1e9) return x.toExponential(significant - 1).replace(/\.?0+e/, 'e').replace('e+', 'e');
  const rounded = Number(x.toPrecision(significant));
  return rounded === 0 ? '0' : String(rounded);
}
