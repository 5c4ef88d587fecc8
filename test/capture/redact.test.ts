// Redaction before storage (src/capture/store/redact.ts): secret-named fields and key-shaped strings
// are replaced; names that only look alike (tokenizer settings, token counts) are kept.
import { describe, expect, it } from 'vitest';
import { redact } from '../../src/capture/store/redact.js';

describe('capture redaction', () => {
  it('replaces secret-named fields at any depth and key-shaped substrings, and counts them', () => {
    const input = {
      headers: { Authorization: 'Bearer abc.def.ghi-jkl', 'x-api-key': 'k', 'X-Goog-Api-Key': 'k', Cookie: 'session=1', 'content-type': 'application/json' },
      env: [{ OPENAI_API_KEY: 'v', HF_TOKEN: 'v', GITHUB_TOKEN: 'v', aws_secret_access_key: 'v', client_secret: 'v', password: 'v' }],
      note: 'keys: sk-ant-api03-AAAAAAAAAAAAAAAAAAAA, tml-BBBBBBBBBBBBBBBBBBBB, ghp_CCCCCCCCCCCCCCCCCCCCCC, AKIAABCDEFGHIJKLMNOP; auth Bearer zzzzzzzzzzzz',
    };
    const { value, count } = redact(input);
    expect(value).toEqual({
      headers: { Authorization: '[REDACTED]', 'x-api-key': '[REDACTED]', 'X-Goog-Api-Key': '[REDACTED]', Cookie: '[REDACTED]', 'content-type': 'application/json' },
      env: [{ OPENAI_API_KEY: '[REDACTED]', HF_TOKEN: '[REDACTED]', GITHUB_TOKEN: '[REDACTED]', aws_secret_access_key: '[REDACTED]', client_secret: '[REDACTED]', password: '[REDACTED]' }],
      note: 'keys: [REDACTED], [REDACTED], [REDACTED], [REDACTED]; auth Bearer [REDACTED]',
    });
    expect(count).toBe(15);
    expect(input.headers.Authorization).toBe('Bearer abc.def.ghi-jkl'); // the caller's object is untouched
  });

  it('keeps what only looks like a secret', () => {
    const input = { eos_token: '<|im_end|>', pad_token: '<|endoftext|>', max_tokens: 64, prompt_tokens: [1, 2], token_count: 3, api_key: null, secret: '', text: 'task-1234567890abcdefghij and sk-short' };
    expect(redact(input)).toEqual({ value: input, count: 0 });
  });
});
