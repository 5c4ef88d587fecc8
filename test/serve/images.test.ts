// `cookbook serve` with a vision model (tiny-qwen3-vl in the real engine): OpenAI `image_url`
// parts, as a data: URL or a local file, through the official clients (npm and Python); the
// prompt is what the model's renderer makes of the image; remote URLs, undecodable images and
// images for a text-only model are 400s that say why and name the part.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMessageImages } from '../../src/cookbook/images/messages.js';
import { modelInputLength } from '../../src/cookbook/model-input.js';
import { rendererForModel } from '../../src/cookbook/renderers/for-model.js';
import { drawShape, type ShapePicture } from '../../src/cookbook/rl/envs/shape-images.js';
import { serveBackend, startServe, stopServe } from '../support/serve.js';
import { ensureOpenAIPythonEnv } from '../support/python-tools.js';

const MODEL = 'tiny-qwen3-vl';
const KEY = 'sk-serve-images';
const PICTURE: ShapePicture = { shape: 'star', colour: 'blue', size: 64, scale: 0.8, dx: 0, dy: 0 };

let backendHandle: Awaited<ReturnType<typeof serveBackend>> | undefined;
let engineUrl: string;
let server: ChildProcess;
let client: OpenAI;
let baseURL: string;
let png: Uint8Array;
let pngPath: string;


const imageMessage = (url: string): OpenAI.ChatCompletionMessageParam[] => [
  { role: 'user', content: [{ type: 'image_url', image_url: { url } }, { type: 'text', text: 'Which shape is this?' }] },
];

async function fails(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await p;
  } catch (e) {
    return e as InstanceType<typeof OpenAI.APIError>;
  }
  throw new Error('expected the request to fail');
}

beforeAll(async () => {
  backendHandle = await serveBackend();
  engineUrl = backendHandle.engineUrl;
  png = await drawShape(PICTURE);
  pngPath = join(mkdtempSync(join(tmpdir(), 'serve-images-')), 'star.png');
  writeFileSync(pngPath, png);
  const started = await startServe(engineUrl, [MODEL, '--api-key', KEY]);
  server = started.child;
  baseURL = started.url;
  client = new OpenAI({ baseURL, apiKey: KEY, maxRetries: 0 });
}, 600_000);

afterAll(async () => {
  await stopServe(server);
  await backendHandle?.stop();
});

describe('cookbook serve: image_url parts', () => {
  it('answers a chat request with an image: the prompt is the renderer’s, the image counted by the model’s processor', async () => {
    const dataUrl = `data:image/png;base64,${Buffer.from(png).toString('base64')}`;
    const answer = await client.chat.completions.create({ model: MODEL, messages: imageMessage(dataUrl), max_tokens: 6, temperature: 0 });
    expect(answer.choices[0].message.role).toBe('assistant');
    const { renderer } = await rendererForModel(MODEL);
    const convo = await loadMessageImages([{ role: 'user', content: [{ type: 'image', image: png }, { type: 'text', text: 'Which shape is this?' }] }]);
    const prompt = renderer.buildGenerationPrompt(convo);
    expect(prompt.chunks.some((c) => c.type === 'image' && c.expected_tokens === 4)).toBe(true);
    expect(answer.usage!.prompt_tokens).toBe(modelInputLength(prompt));

    // The official Python client: the same image inline and as a local file, greedy, the same answer.
    const { python } = await ensureOpenAIPythonEnv();
    const run = spawnSync(python, [join(import.meta.dirname, 'openai_image_check.py'), baseURL, MODEL, KEY, pngPath], { encoding: 'utf8', timeout: 120_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const py = JSON.parse(run.stdout);
    expect(py.data_url.choices[0].message.content).toBe(answer.choices[0].message.content);
    expect(py.file_url.choices[0].message.content).toBe(answer.choices[0].message.content);
    expect(py.data_url.usage.prompt_tokens).toBe(answer.usage!.prompt_tokens);
    expect(py.remote).toMatchObject({ status: 400, code: 'unsupported_parameter', param: 'messages[0].content[0].image_url.url' });
    expect(py.remote.message).toMatch(/remote image URLs \(https:\) are not fetched; send the image inline as a data: URL/);
  });

  it('refuses an undecodable image, naming the part', async () => {
    const bad = await fails(client.chat.completions.create({ model: MODEL, messages: imageMessage('data:image/png;base64,iVBORw0KGgoAAAA='), max_tokens: 2 }));
    expect(bad.status).toBe(400);
    expect(bad.message).toMatch(/messages\[0\]\.content\[0\]/);
    const missing = await fails(client.chat.completions.create({ model: MODEL, messages: imageMessage('/no/such/image.png'), max_tokens: 2 }));
    expect(missing.status).toBe(400);
    expect(missing.message).toMatch(/messages\[0\]\.content\[0\].*no\/such\/image\.png/);
  });
});
