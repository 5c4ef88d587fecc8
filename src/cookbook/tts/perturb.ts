// The reference's step perturbation (Appendix A of the TTS paper): every number in a step moves by
// an offset drawn from {-3, -2, -1, 1, 2, 3} with `random.Random.choice`, drawn in text order from
// one generator per chain of thought (python-random.ts: the same draws as the reference's seed).
// Numbers are parsed and printed as Python does: `float(text) + offset`, then `str(int(v))` for an
// integer, `f"{v:.{d}f}"` with the original's d decimals otherwise; any Unicode decimal digit
// counts, as Python's `\d` (its value read from its place in its block of ten).
// What differs from the reference: nothing in the draws or the text; only a decimal digit that
// Python 3.11's Unicode 14 tables lack and the JS engine's newer ones have would count here alone.
import { PythonRandom, randbelow } from '../python-random.js';
import { pyFixed } from './py-format.js';

const OFFSETS = [-3, -2, -1, 1, 2, 3] as const;

/** An integer or simple decimal that is not part of a name (x1, step2): the reference's NUMBER_PATTERN. */
const NUMBER = /(?<![a-zA-Z_])(-?\p{Nd}+(?:\.\p{Nd}+)?)(?![a-zA-Z_])/gu;
const ND = /\p{Nd}/u;

export function hasNumbers(text: string): boolean {
  NUMBER.lastIndex = 0;
  return NUMBER.test(text);
}

/** A Unicode decimal digit's value: Nd digits come in runs of ten, 0 to 9, so its offset in its run. */
function digitValue(ch: string): number {
  const cp = ch.codePointAt(0)!;
  if (cp >= 0x30 && cp <= 0x39) return cp - 0x30;
  let start = cp;
  while (ND.test(String.fromCodePoint(start - 1))) start--;
  return (cp - start) % 10;
}

const asciiDigits = (s: string) => [...s].map((c) => (c === '-' || c === '.' ? c : String(digitValue(c)))).join('');

/** `random.Random.choice(_OFFSETS)`: `_randbelow(6)`. */
export const drawOffset = (rng: PythonRandom): number => OFFSETS[randbelow(rng, OFFSETS.length)];

export function perturbNumbers(text: string, rng: PythonRandom): string {
  return text.replace(NUMBER, (original: string) => {
    const value = Number(asciiDigits(original)) + drawOffset(rng);
    const dot = original.indexOf('.');
    if (dot === -1) {
      // int() of an infinite float (a number past 1e308 in the text) raises in the reference too.
      if (!Number.isFinite(value)) throw new RangeError(`cannot convert float ${value} to integer (number ${original.slice(0, 40)}…)`);
      return BigInt(Math.trunc(value)).toString();
    }
    return pyFixed(value, [...original.slice(dot + 1)].length);
  });
}
