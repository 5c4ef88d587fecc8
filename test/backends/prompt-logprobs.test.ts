// Prompt logprobs are one per prompt token, the first null: a server that leaves the first out
// (SkyRL-tx 0.3: N-1 for N tokens) is read as if it had sent it; any other count is its error.
import { describe, expect, it } from 'vitest';
import { withWholePromptLogprobs } from '../../src/backends/sampling-session.js';
import { BackendError, type SampleResponse } from '../../src/backends/types.js';

const response = (prompt_logprobs: Array<number | null> | null): SampleResponse => ({ sequences: [], prompt_logprobs }) as unknown as SampleResponse;

describe('withWholePromptLogprobs', () => {
  it('keeps a whole answer as it is', () => {
    expect(withWholePromptLogprobs(response([null, -1, -2]), 3).prompt_logprobs).toEqual([null, -1, -2]);
    expect(withWholePromptLogprobs(response(null), 3).prompt_logprobs).toBeNull();
  });
  it('puts back the missing first entry, so each value stays at its token', () => {
    expect(withWholePromptLogprobs(response([-1, -2]), 3).prompt_logprobs).toEqual([null, -1, -2]);
  });
  it('refuses any other count, naming both', () => {
    expect(() => withWholePromptLogprobs(response([-1]), 3)).toThrow(BackendError);
    expect(() => withWholePromptLogprobs(response([-1]), 3)).toThrow('1 prompt logprobs for a prompt of 3 tokens');
  });
  it('leaves the count alone when the prompt length is unknown (an image without its token count)', () => {
    expect(withWholePromptLogprobs(response([-1]), undefined).prompt_logprobs).toEqual([-1]);
  });
});
