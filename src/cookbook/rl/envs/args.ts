// Validation of a registered environment's `dataset.args`: errors name the config path.
import type { z } from 'zod';
import { ConfigurationError } from '../../errors.js';

export function parseEnvArgs<S extends z.ZodType>(schema: S, args: Record<string, unknown>, envName: string): z.output<S> {
  const parsed = schema.safeParse(args);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = ['dataset', 'args', ...issue.path.map(String)].join('.');
  throw new ConfigurationError(`${where}: ${issue.message} (environment "${envName}")`);
}

/** Python's `str.lower()` compare and `int()` of a guess: surrounding whitespace and `_` groups allowed. */
export function pyInt(text: string): number | null {
  const t = text.trim();
  if (!/^[+-]?\d+(?:_\d+)*$/.test(t)) return null;
  return Number(t.replace(/_/g, ''));
}

/** Python's `float()` of a score string (decimal, exponent, inf/nan); null where Python raises. */
export function pyFloat(text: string): number | null {
  const t = text.trim().toLowerCase();
  if (/^[+-]?(inf|infinity)$/.test(t)) return t.startsWith('-') ? -Infinity : Infinity;
  if (/^[+-]?nan$/.test(t)) return NaN;
  if (!/^[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:e[+-]?\d(?:_?\d)*)?$/.test(t)) return null;
  return Number(t.replace(/_/g, ''));
}
