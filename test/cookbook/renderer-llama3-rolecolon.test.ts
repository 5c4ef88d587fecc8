// Llama3 (spec §6.4) against the shipped Llama 3 chat template, and RoleColon (spec §6.3) with
// the reference's role_colon_test.py cases.
import { beforeAll, describe, expect, it } from 'vitest';
import { RendererError } from '../../src/cookbook/errors.js';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import { TrainOnWhat, type Message, type Renderer } from '../../src/cookbook/renderers/types.js';
import { getTokenizer, type Tokenizer } from '../../src/cookbook/tokenizer.js';
import * as C from './conversations.js';

let llamaTok: Tokenizer;
let qwenTok: Tokenizer;
let llama3: Renderer;
beforeAll(async () => {
  [llamaTok, qwenTok] = await Promise.all([getTokenizer('tiny-llama3'), getTokenizer('tiny-qwen3')]);
  llama3 = getRenderer('llama3', llamaTok);
});

const EOT = 128009;
const BOS = 128000;
const asstHeader = () => llamaTok.encode('<|start_header_id|>assistant<|end_header_id|>\n\n', { addSpecialTokens: false });

describe('llama3 renderer vs the tokenizer chat template (no date preamble, always a generation prompt)', () => {
  it.each([
    ['basic_3turn', C.basic3turn],
    ['system_3turn', C.system3turn],
  ] as const)('generation %s', (_id, conv) => {
    expect(modelInputToInts(llama3.buildGenerationPrompt(conv()))).toEqual(llamaTok.applyChatTemplate(conv() as never));
  });

  it.each([
    ['basic_2turn', C.basic2turn],
    ['system_2turn', C.system2turn],
    ['basic_4turn', C.basic4turn],
  ] as const)('supervised %s', (_id, conv) => {
    const ids = modelInputToInts(llama3.buildSupervisedExample(conv()).modelInput);
    const hf = llamaTok.applyChatTemplate(conv() as never);
    expect(ids).toEqual(hf.slice(0, hf.length - asstHeader().length));
  });

  it('BOS weight 0, headers 0, the last assistant output trained', () => {
    const { modelInput, weights } = llama3.buildSupervisedExample(C.basic2turn());
    const ids = modelInputToInts(modelInput);
    expect(ids[0]).toBe(BOS);
    expect(llamaTok.decode(ids.filter((_, i) => weights[i] === 1))).toBe("I'm fine, thank you!<|eot_id|>");
    expect(ids[ids.length - 1]).toBe(EOT);
  });

  it('parse: one <|eot_id|> → stop_sequence, none → malformed, two → RendererError', () => {
    const enc = (s: string) => llamaTok.encode(s, { addSpecialTokens: false });
    const ok = llama3.parseResponse([...enc('Paris.'), EOT]);
    expect(ok).toEqual({ message: { role: 'assistant', content: 'Paris.' }, termination: 'stop_sequence', ok: true });
    const trunc = llama3.parseResponse(enc('Par'));
    expect(trunc.termination).toBe('malformed');
    expect(trunc.message.content).toBe('Par');
    expect(() => llama3.parseResponse([...enc('a'), EOT, ...enc('b'), EOT])).toThrow(RendererError);
    expect(llama3.getStopSequences()).toEqual([EOT]);
    expect(llama3.hasExtensionProperty).toBe(true);
  });
});

describe('role_colon renderer', () => {
  it('supervised example with BOS: [BOS] "User:" " Q\\n\\n" "Assistant:" " A\\n\\n" "User:", weights on the last two', () => {
    const rc = getRenderer('role_colon', llamaTok);
    const conv: Message[] = [
      { role: 'user', content: 'Q' },
      { role: 'assistant', content: 'A' },
    ];
    const { modelInput, weights } = rc.buildSupervisedExample(conv);
    const enc = (s: string) => llamaTok.encode(s, { addSpecialTokens: false });
    const pieces = [[BOS], enc('User:'), enc(' Q\n\n'), enc('Assistant:'), enc(' A\n\n'), enc('User:')];
    expect(modelInput.chunks.map((c) => (c.type === 'encoded_text' ? c.tokens : []))).toEqual(pieces);
    const expectedWeights = pieces.flatMap((p, k) => p.map(() => (k >= 4 ? 1 : 0)));
    expect(weights).toEqual(expectedWeights);
    expect(modelInputToInts(rc.buildGenerationPrompt(conv.slice(0, 1)))).toEqual([BOS, ...enc('User:'), ...enc(' Q\n\n'), ...enc('Assistant:')]);
    expect(rc.getStopSequences()).toEqual(['\n\nUser:']);
  });

  it('no BOS for Qwen; a trailing non-assistant message appends the "<UNUSED>" placeholder', () => {
    const rc = getRenderer('role_colon', qwenTok);
    const conv: Message[] = [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'Q' },
    ];
    const { modelInput, weights } = rc.buildSupervisedExample(conv, TrainOnWhat.ALL_MESSAGES);
    expect(qwenTok.decode(modelInputToInts(modelInput))).toBe('System: S\n\nUser: Q\n\n<UNUSED>');
    const trained = modelInputToInts(modelInput).filter((_, i) => weights[i] === 1);
    expect(qwenTok.decode(trained)).toBe(' S\n\n Q\n\n<UNUSED>');
  });

  describe('parse_response (role_colon_test.py)', () => {
    let rc: Renderer;
    let enc: (s: string) => number[];
    beforeAll(() => {
      rc = getRenderer('role_colon', qwenTok);
      enc = (s) => qwenTok.encode(s, { addSpecialTokens: false });
    });

    it('EOS only → eos (clean, not a stop sequence)', () => {
      const answer = 'The answer is \\boxed{42}.';
      const r = rc.parseResponse([...enc(answer), qwenTok.eosTokenId]);
      expect(r.termination).toBe('eos');
      expect(r.ok).toBe(true);
      expect(r.message).toEqual({ role: 'assistant', content: answer });
    });

    it('"\\n\\nUser:" → stop_sequence', () => {
      const r = rc.parseResponse(enc('Some answer.\n\nUser:'));
      expect(r.termination).toBe('stop_sequence');
      expect(r.message.content).toBe('Some answer.');
    });

    it('no terminator → malformed', () => {
      const r = rc.parseResponse(enc('Some incomplete answer'));
      expect(r.termination).toBe('malformed');
      expect(r.ok).toBe(false);
      expect(r.message.content).toBe('Some incomplete answer');
    });

    it('delimiter plus EOS → malformed', () => {
      const r = rc.parseResponse([...enc('Some answer.\n\nUser:'), qwenTok.eosTokenId]);
      expect(r.termination).toBe('malformed');
      expect(r.message.content).toBe('Some answer.');
    });

    it('several delimiters → malformed', () => {
      const r = rc.parseResponse(enc('Answer.\n\nUser: question?\n\nUser:'));
      expect(r.termination).toBe('malformed');
      expect(r.message.content).toBe('Answer.');
    });

    it.each([' leading', 'trailing ', '  both  ', ' '])('keeps the content whitespace it rendered: %j', (content) => {
      const r = rc.parseResponse(enc(' ' + content + '\n\n' + 'User:'));
      expect(r.termination).toBe('stop_sequence');
      expect(r.message.content).toBe(content);
    });
  });
});
