// Redaction of credentials before a row is stored: captured traffic carries request metadata (headers,
// client settings), and a key written to the store would outlive the run in every export made from it.
// Two rules: a value under a secret-looking key is replaced whole; a string anywhere that looks like a
// key (`sk-…`, `Bearer …`, …) has that part replaced. Key names and token shapes are the ones the
// Anthropic, OpenAI, Tinker, Hugging Face, GitHub and AWS clients use.
import type { JsonValue } from '../rows.js';

export const REDACTED = '[REDACTED]';

// Whole names, then endings (`x-api-key`, `OPENAI_API_KEY`, `x-goog-api-key`, `client_secret`, `HF_TOKEN`).
// A bare `token` is left alone: tokenizer settings (`eos_token`, `pad_token`) are names, not secrets.
const SECRET_NAME = /^(authorization|proxy[-_]authorization|cookie|set[-_]cookie|password|passwd|secret|apikey)$/i;
const SECRET_ENDING = /(^|[-_])(api[-_]?key|secret[-_]?key|secret[-_]?access[-_]?key|private[-_]?key|client[-_]?secret|access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|session[-_]?token|(hf|hub|github|gh|gitlab|wandb|slack|discord|npm|pypi)[-_]token)$/i;
const isSecretKey = (key: string) => SECRET_NAME.test(key) || SECRET_ENDING.test(key);

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
        if (isSecretKey(key) && inner !== null && inner !== '') {
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
