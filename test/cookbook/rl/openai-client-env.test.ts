// Environments written against an OpenAI client, without a server: the adapter renders each
// create() call's messages as the policy's observation, hands the parsed action back as the
// OpenAI-shaped assistant message, and ends the episode with the episode's reward. The shipped
// example (openai_client_arithmetic) runs on the real stack in test/workflows/rl-openai-client.test.ts.
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadMessageImages } from '../../../src/cookbook/images/messages.js';
import { TINY_QWEN3_VL_IMAGE_PROCESSOR } from '../../../src/cookbook/images/processors.js';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import { arithmeticDialogue } from '../../../src/cookbook/rl/envs/openai-client-arithmetic.js';
import { OpenAIClientEnv, OpenAIClientMessageEnv, type OpenAIClientEpisode, type PolicyChatCompletion } from '../../../src/cookbook/rl/openai-client-env.js';
import { registeredRLDataset } from '../../../src/cookbook/rl/registry.js';
import type { InitialObservation } from '../../../src/cookbook/rl/types.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';

let tok: Tokenizer;
let renderer: Renderer;
let imEnd: number;
beforeAll(async () => {
  tok = await getTokenizer('tiny-qwen3');
  renderer = getRenderer('qwen3', tok);
  imEnd = tok.tokenToId('<|im_end|>');
});

const action = (text: string) => [...tok.encode(text, { addSpecialTokens: false }), imEnd];
const ints = (ob: unknown) => modelInputToInts((ob as InitialObservation).ob);

describe('OpenAIClientEnv', () => {
  it('each create() call is an observation; the parsed action is what create() returns; the episode reward ends it', async () => {
    const seen: PolicyChatCompletion[] = [];
    const episode: OpenAIClientEpisode = async (client) => {
      const tools = [{ type: 'function' as const, function: { name: 'lookup', description: 'Look a word up', parameters: { type: 'object' } } }];
      const messages = [{ role: 'user' as const, content: 'Define "cat".' }];
      const first = await client.chat.completions.create({ model: 'ignored', temperature: 0.3, messages, tools });
      seen.push(first);
      const call = first.choices[0].message.tool_calls![0];
      const second = await client.chat.completions.create({ messages: [...messages, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'a small feline' }], tools });
      seen.push(second);
      return { reward: second.choices[0].message.content === 'A small feline.' ? 1 : 0, metrics: { turns: 2 } };
    };
    const env = new OpenAIClientEnv(renderer, episode);
    const ob = await env.initialObservation();
    const expectedFirst = renderer.buildGenerationPrompt([
      ...(renderer as unknown as { createConversationPrefixWithTools: (t: unknown[], s?: string) => never[] }).createConversationPrefixWithTools([{ name: 'lookup', description: 'Look a word up', parameters: { type: 'object' } }]),
      { role: 'user', content: 'Define "cat".' },
    ]);
    expect(ints(ob)).toEqual(modelInputToInts(expectedFirst));

    const step1 = await env.step(action('<think>\nLook it up.\n</think>\n\n<tool_call>\n{"name": "lookup", "arguments": {"word": "cat"}}\n</tool_call>'));
    expect(step1.episodeDone).toBe(false);
    expect(step1.reward).toBe(0);
    expect(seen[0].choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { role: 'assistant', content: null, reasoning_content: 'Look it up.' } });
    // Ids come from the turn, so a retried rollout sees the same conversation.
    expect(seen[0].choices[0].message.tool_calls).toEqual([{ id: 'call_0_0', type: 'function', function: { name: 'lookup', arguments: '{"word": "cat"}' } }]);
    expect(tok.decode(modelInputToInts(step1.nextObservation))).toContain('<tool_response>\na small feline\n</tool_response>');

    const step2 = await env.step(action('<think>\n\n</think>\n\nA small feline.'));
    expect(step2).toMatchObject({ episodeDone: true, reward: 1, metrics: { turns: 2 } });
    expect(seen[1].choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'A small feline.' } });
  });

  it('an episode that fails, or ends without asking, fails the rollout with its error', async () => {
    const failing = new OpenAIClientMessageEnv(renderer, async () => {
      throw new Error('env crashed');
    });
    await expect(failing.initialObservation()).rejects.toThrow('env crashed');
    const silent = new OpenAIClientMessageEnv(renderer, async () => ({ reward: 1 }));
    await expect(silent.initialObservation()).rejects.toThrow('without asking the policy');
    const toolsWithoutFormat = new OpenAIClientMessageEnv(getRenderer('role_colon', tok), async (client) => {
      await client.chat.completions.create({ messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f' } }] });
      return { reward: 0 };
    });
    await expect(toolsWithoutFormat.initialObservation()).rejects.toThrow('role_colon has no tool-calling format');
  });

  it('an answer cut at max_tokens reaches the episode with finish_reason length, and the episode goes on', async () => {
    const finishes: string[] = [];
    const env = new OpenAIClientEnv(renderer, async (client) => {
      for (let i = 0; i < 2; i++) {
        const r = await client.chat.completions.create({ messages: [{ role: 'user', content: `turn ${i}` }] });
        finishes.push(`${r.choices[0].finish_reason}:${r.choices[0].message.content}`);
      }
      return { reward: 0.25 };
    });
    await env.initialObservation();
    const cut = await env.step(tok.encode('<think>\n\n</think>\n\nhalf an ans', { addSpecialTokens: false }), { extra: { stop_reason: 'length' } });
    expect(cut).toMatchObject({ episodeDone: false, reward: 0, metrics: { truncated_turns: 1 } });
    const done = await env.step(action('<think>\n\n</think>\n\nwhole'));
    expect(done).toMatchObject({ episodeDone: true, reward: 0.25 });
    expect(finishes).toEqual(['length:half an ans', 'stop:whole']);
  });

  it('an image_url part is decoded and rendered by a vision renderer, as serve renders it; a system image with tools is refused', async () => {
    const vision = getRenderer('qwen3_vl_instruct', tok, { imageProcessor: TINY_QWEN3_VL_IMAGE_PROCESSOR });
    const png = await sharp({ create: { width: 96, height: 64, channels: 3, background: '#3366cc' } }).png().toBuffer();
    const url = `data:image/png;base64,${png.toString('base64')}`;
    const env = new OpenAIClientEnv(vision, async (client) => {
      const r = await client.chat.completions.create({
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }, { type: 'text', text: 'Colour?' }] }],
      });
      return { reward: r.choices[0].message.content === 'Blue.' ? 1 : 0 };
    });
    const ob = (await env.initialObservation()).ob;
    const expected = vision.buildGenerationPrompt(await loadMessageImages([{ role: 'user', content: [{ type: 'image', image: png }, { type: 'text', text: 'Colour?' }] }]));
    expect(ob).toEqual(expected);
    expect(ob.chunks.filter((c) => c.type === 'image').map((c) => c.expected_tokens)).toEqual([6]);
    expect(await env.step(action('Blue.'))).toMatchObject({ episodeDone: true, reward: 1 });

    const systemImage = new OpenAIClientMessageEnv(vision, async (client) => {
      await client.chat.completions.create({
        messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url } }] }, { role: 'user', content: 'x' }],
        tools: [{ type: 'function', function: { name: 'f' } }],
      });
      return { reward: 0 };
    });
    await expect(systemImage.initialObservation()).rejects.toThrow('a system message with images cannot be combined with tools');
  });

  it('the shipped arithmetic dialogue: the second question carries the first answer; reward is the share right', async () => {
    const env = new OpenAIClientEnv(renderer, (client) => arithmeticDialogue(client, 3, 4, 5));
    await env.initialObservation();
    const turn1 = await env.step(action('<think>\n\n</think>\n\n7'));
    expect(turn1.episodeDone).toBe(false);
    expect(tok.decode(modelInputToInts(turn1.nextObservation))).toContain('<|im_start|>assistant\n7<|im_end|>\n<|im_start|>user\nMultiply that by 5.<|im_end|>');
    const turn2 = await env.step(action('<think>\n\n</think>\n\n36'));
    expect(turn2).toMatchObject({ episodeDone: true, reward: 0.5, metrics: { sum_correct: 1, product_correct: 0 } });
  });

  it('is registered for configs as openai_client_arithmetic, with batches that repeat across builds', async () => {
    const build = registeredRLDataset('openai_client_arithmetic')!;
    const a = await build({ args: { batch_size: 3, group_size: 2 }, renderer, tokenizer: tok, modelName: 'tiny-qwen3' });
    const b = await build({ args: { batch_size: 3, group_size: 2 }, renderer, tokenizer: tok, modelName: 'tiny-qwen3' });
    const problems = (d: typeof a) => d.train.getBatch(5).map((g) => (g as unknown as { problem: number[] }).problem);
    expect(problems(a)).toEqual(problems(b));
    expect(problems(a)).not.toEqual(a.train.getBatch(6).map((g) => (g as unknown as { problem: number[] }).problem));
    expect(await a.train.getBatch(0)[0].makeEnvs()).toHaveLength(2);
    await expect(async () => build({ args: { batch_size: 0, group_size: 2 }, renderer, tokenizer: tok, modelName: 'tiny-qwen3' })).rejects.toThrow('dataset.args.batch_size');
  });
});
