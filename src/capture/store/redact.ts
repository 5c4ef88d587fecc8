// Redaction of credentials before a row is stored: captured traffic carries request metadata (headers,
// client settings), and a key written to the store would outlive the run in every export made from it.
// Two rules: a value under a secret-looking key is replaced whole; a string anywhere that looks like a
// key (`sk-…`, `Bearer …`, …) has that part replaced. Key names and token shapes are the ones the
// Anthropic, OpenAI, Tinker, Hugging Face, GitHub and AWS clients use.
import type { JsonValue } from '../rows.js';

export const REDACTED = '[REDACTED]';

const SECRET_KEY = /^(authorization|proxy[-_]authorization|x[-_]api[-_]key|api[-_]?key|[a-z0-9]+[-_]api[-_]?key|x[-_]auth[-_]token|auth[-_]token|access[-_]token|refresh[-_]token|id[-_]token|client[-_]secret|secret|secret[-_]key|aws[-_]secret[-_]access[-_]key|password|passwd|cookie|set[-_]cookie)$/i;

const SECRET_TEXT: RegExp[] = [
  /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/g, // an Authorization header's value
  /\bsk-[A-Za-z0-9_-]{16,}/g, // OpenAI and Anthropic (sk-ant-…) keys
  /\btml-[A-Za-z0-9_-]{16,}/g, // Tinker keys
  /\bhf_[A-Za-z0-9]{20,}/g, // Hugging Face tokens
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g, // GitHub tokens
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key ids
];

export interface Redaction {
  value: JsonValue;
  /** How many values or substrings were replaced. */
  count: number;
}

/** A copy of `value` with credentials replaced by `[REDACTED]`; the input is left as it was. */
export function redact(value: JsonValue): Redaction {
  let count = 0;
  const text = (s: string): string => {
    let out = s;
    for (const pattern of SECRET_TEXT) {
      out = out.replace(pattern, (match) => {
        count += 1;
        return match.startsWith('Bearer') ? `Bearer ${REDACTED}` : REDACTED;
      });
    }
    return out;
  };
  const walk = (v: JsonValue): JsonValue => {
    if (typeof v === 'string') return text(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, JsonValue> = {};
      for (const [key, inner] of Object.entries(v)) {
        if (SECRET_KEY.test(key) && inner !== null && inner !== '') {
          count += 1;
          out[key] = REDACTED;
        } else {
          out[key] = walk(inner);
        }
      }
      return out;
    }
    return v;
  };
  const redacted = walk(value);
  return { value: redacted, count };
}
