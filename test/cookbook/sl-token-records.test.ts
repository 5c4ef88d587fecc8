// SL rows with their own tokens and weights (supervised/token-record.ts): the datum trains on exactly
// those tokens, weighted as the row says, beside ordinary rows rendered from their messages; bad
// records are refused naming the file and line.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DataFormatError } from '../../src/cookbook/errors.js';
import { buildChatDatasets } from '../../src/cookbook/supervised/dataset.js';
import { parseConversationsJsonl } from '../../src/cookbook/supervised/jsonl.js';

const dir = mkdtempSync(path.join(tmpdir(), 'h61f-sltok-'));
const messages = [
  { role: 'user', content: 'hi' },
  { role: 'assistant', content: 'hello' },
];

describe('token records in a conversations file', () => {
  it('trains on the row’s tokens: targets are the tokens shifted by one, weights the row’s, normalised by their sum', async () => {
    const tokens = [151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198, 9707, 151645];
    const weights = [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1];
    const file = path.join(dir, 'records.jsonl');
    writeFileSync(file, JSON.stringify({ messages, tokens, weights }) + '\n' + JSON.stringify({ messages }) + '\n');
    const { train } = await buildChatDatasets({ file_path: file, batch_size: 2 }, 'tiny-qwen3');
    const batch = await train.batchAt(0, 0);
    const fromRecord = batch.find((d) => d.loss_fn_inputs.target_tokens.data.length === tokens.length - 1)!;
    expect(fromRecord.model_input.chunks).toEqual([{ type: 'encoded_text', tokens: tokens.slice(0, -1) }]);
    expect(fromRecord.loss_fn_inputs.target_tokens.data).toEqual(tokens.slice(1));
    expect(fromRecord.loss_fn_inputs.weights.data).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0.5, 0.5]);
    // The other row is rendered from its messages as before (a different length: not the record's tokens).
    expect(batch.filter((d) => d !== fromRecord)).toHaveLength(1);
  });

  it('refuses a bad record naming file and line', () => {
    const bad = (extra: object) => () => parseConversationsJsonl(JSON.stringify({ messages, ...extra }), 'x.jsonl');
    expect(bad({ tokens: [1, 2] })).toThrow(new DataFormatError('x.jsonl:1: "tokens" and "weights" go together (this row has only "tokens")'));
    expect(bad({ tokens: [1, 2], weights: [1] })).toThrow('x.jsonl:1: 2 tokens but 1 weights (one weight per token)');
    expect(bad({ tokens: [1, -2], weights: [0, 1] })).toThrow('x.jsonl:1: "tokens" must be a list of token ids');
    expect(bad({ tokens: [1, 2], weights: [0, 0] })).toThrow('x.jsonl:1: every weight is 0');
    expect(bad({ tokens: [1], weights: [1] })).toThrow('needs at least 2 tokens');
  });
});
