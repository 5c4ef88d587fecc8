// The forecasting prompt, the answer parser and the Brier reward of the reference's
// recipes/forecasting/env.py. Python's regex semantics are kept where they differ from JS: `\s` is
// Python's whitespace, `\d` any Unicode decimal digit (float() reads them), IGNORECASE lets
// "ı" and "İ" match "i"; lines split where str.splitlines() splits.
import { PY_WS_CLASS, pyStripWs } from '../../../renderers/py-whitespace.js';
import type { ForecastExample } from './data.js';

export function renderPrompt(example: ForecastExample): string {
  // Neither the resolved outcome nor the market prices of the row reach the prompt.
  return `Forecast whether this market will resolve YES using information available through ${example.snapshot_time.isoformat()}.

Event:
${example.event_title}

Market:
${example.market}

Reference material:
${example.reference_material}

Resolution criteria:
${example.resolution_criteria}

Market close time: ${example.close_time.isoformat()}

Output only the probability of YES as a number between 0 and 1.`;
}

const WS = `[${PY_WS_CLASS}]`;
const EMPHASIS = '(?:\\*{1,2}|_{1,2})?';
const D = '\\p{Nd}';
/** Python's IGNORECASE also folds dotless ı and dotted İ onto i (sre's extra equivalences). */
const word = (w: string) => w.replace(/i/g, '[iıİ]');
const FINAL_FORECAST = new RegExp(
  `^${WS}*${EMPHASIS}` +
    `(?:(?:(?:${word('final')}${WS}+)?(?:${word('answer')}|${word('forecast')})|${word('probability')}(?:${WS}+of${WS}+yes)?)${WS}*[:=]${WS}*)?` +
    `${EMPHASIS}(?<value>[+-]?(?:${D}+(?:\\.${D}*)?|\\.${D}+)(?:[eE][+-]?${D}+)?)${WS}*(?<percent>%?)${EMPHASIS}[.!]?${EMPHASIS}${WS}*$`,
  'iu',
);
const LINE_BREAK = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;
const ND_DIGIT = /\p{Nd}/u;

/** A Unicode decimal digit as ASCII: Nd digits come in runs of ten from zero. */
function asciiDigit(c: string): string {
  let cp = c.codePointAt(0)!;
  let zero = cp;
  while (ND_DIGIT.test(String.fromCodePoint(zero - 1))) zero--;
  cp = (cp - zero) % 10;
  return String(cp);
}

/** `float()` of the matched number (ASCII or other Unicode decimal digits). */
function pyFloatOf(text: string): number {
  return Number(text.replace(/\p{Nd}/gu, (c) => (c >= '0' && c <= '9' ? c : asciiDigit(c))));
}

/** `parse_forecast`: a probability in [0, 1] from the last non-blank line, else null. */
export function parseForecast(response: string): number | null {
  const lines = response.split(LINE_BREAK).filter((line) => pyStripWs(line));
  if (!lines.length) return null;
  const m = FINAL_FORECAST.exec(lines[lines.length - 1]);
  if (!m) return null;
  let probability = pyFloatOf(m.groups!.value);
  if (m.groups!.percent) probability /= 100.0;
  return probability >= 0 && probability <= 1 ? probability : null;
}

/** `1 - (p - y)^2`, an affine form of the binary Brier score. */
export function brierReward(probability: number, outcome: number): number {
  if (!Number.isFinite(probability) || !(probability >= 0 && probability <= 1)) throw new RangeError(`probability must be finite and in [0, 1], got ${probability}`);
  if (outcome !== 0 && outcome !== 1) throw new RangeError(`outcome must be 0 or 1, got ${outcome}`);
  return 1.0 - (probability - outcome) ** 2;
}

export interface ForecastScores {
  brier_reward: number;
  accuracy: number;
  format_valid: number;
}

/** `_score`: zeros for no forecast; accuracy 0.5 for exactly 0.5, else whether it leans the right way. */
export function scoreForecast(probability: number | null, outcome: number): ForecastScores {
  if (probability === null) return { brier_reward: 0.0, accuracy: 0.0, format_valid: 0.0 };
  const accuracy = probability === 0.5 ? 0.5 : probability > 0.5 === Boolean(outcome) ? 1.0 : 0.0;
  return { brier_reward: brierReward(probability, outcome), accuracy, format_valid: 1.0 };
}

/**
 * f"{p:.6f}": toFixed rounds an exact tie up where Python rounds it to even; in [0, 1] the ties are
 * the odd multiples of 1/128 (e.g. 0.0078125 → "0.007812").
 */
export function formatForecast(p: number): string {
  if (Object.is(p, -0)) return '-0.000000';
  const t = Math.abs(p) * 128;
  if (Number.isInteger(t) && t % 2 === 1 && t < 2 ** 40) {
    const scaled = t * 7812.5; // |p| * 1e6, exactly
    const floor = Math.floor(scaled);
    const n = floor % 2 === 0 ? floor : floor + 1;
    return `${p < 0 ? '-' : ''}${Math.floor(n / 1e6)}.${String(n % 1e6).padStart(6, '0')}`;
  }
  return p.toFixed(6);
}
