// `cookbook decide` (the decisions recipe's demo) as a user runs it: the CLI in its own process
// with no TTY, against the real engine. Its probabilities are the library's sampleDecision on the
// same model, rounded to 4 places as the demo prints them.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend } from '../../src/backends/tinker-backend.js';
import { rendererForModel } from '../../src/cookbook/renderers/for-model.js';
import { Decision, DecisionRenderer, sampleDecision } from '../../src/cookbook/supervised/decisions/index.js';
import { join } from 'node:path';
import { cookbookBin, cookbookProcess } from '../support/cli.js';
import { serveBackend } from '../support/serve.js';

const MODEL = 'tiny-qwen3';
let backend: Awaited<ReturnType<typeof serveBackend>>;
beforeAll(async () => {
  backend = await serveBackend();
});
afterAll(async () => {
  await backend?.stop();
});

function decide(args: string[], input?: string): Promise<{ code: number; out: string; err: string }> {
  const child = spawn(process.execPath, [cookbookBin, 'decide', ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TINKER_API_KEY: 'tml-test', TINKER_BASE_URL: backend.engineUrl } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  child.stdin.end(input ?? '');
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? 1, out, err })));
}

/** The library's answer for the same decision, rounded as the CLI prints it. */
async function expected(text: string, choices: Array<[string, string]>): Promise<Record<string, number>> {
  const { renderer, tokenizer } = await rendererForModel(MODEL);
  const tinker = createTinkerBackend({ baseUrl: backend.engineUrl, apiKey: 'tml-test' });
  try {
    const sampler = await tinker.createSamplingSession({ baseModel: MODEL });
    const probs = await sampleDecision(sampler, new DecisionRenderer(renderer, tokenizer).render(new Decision(text, choices)));
    return Object.fromEntries([...probs].map(([l, p]) => [l, Math.round(p * 1e4) / 1e4]));
  } finally {
    await tinker.close();
  }
}

const TEAMS: Array<[string, string]> = [
  ['billing', 'Charges, invoices, credits, payment methods and pricing'],
  ['sdk', 'The tinker Python package: installation, API errors, training and sampling calls'],
  ['console', 'The web console: signing in, API keys, viewing runs and checkpoints'],
  ['cookbook', 'The Tinker Cookbook recipes: training loops, renderers, evaluations and docs'],
];

describe('cookbook decide', { timeout: 180_000 }, () => {
  it('a question and its --choice options: one probability per label, in choice order', async () => {
    const r = await decide([MODEL, 'Is it raining?', '--choice', 'yes:It is raining', '--choice', 'no: It is dry: no rain']);
    expect(r.code, r.err).toBe(0);
    const got = JSON.parse(r.out);
    expect(Object.keys(got)).toEqual(['yes', 'no']);
    expect(got).toEqual(await expected('Is it raining?', [['yes', 'It is raining'], ['no', 'It is dry: no rain']]));
    expect(Math.abs((got.yes as number) + (got.no as number) - 1)).toBeLessThanOrEqual(1e-4);
  });

  it('without a TTY, one question per stdin line (blank lines skipped) and one JSON line each: the demo’s teams', async () => {
    const questions = ['Why was my card charged twice?', 'How do I pick a learning rate for LoRA?'];
    const r = await decide([MODEL], `${questions[0]}\n\n${questions[1]}\n`);
    expect(r.code, r.err).toBe(0);
    const lines = r.out.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    const frame = (q: string) => `A user asked the following question about Tinker:\n\n${q}\n\nWhich team should answer it?`;
    expect(lines[0]).toEqual(await expected(frame(questions[0]), TEAMS));
    expect(lines[1]).toEqual(await expected(frame(questions[1]), TEAMS));
  });

  it('refuses one choice, or repeated labels, before contacting the backend', async () => {
    const one = await decide([MODEL, 'q', '--choice', 'only:the one']);
    expect(one.code).toBe(2);
    expect(one.err).toMatch(/--choice: A decision needs at least two choices, got \['only'\]/);
    const twice = await decide([MODEL, 'q', '--choice', 'a', '--choice', 'a:again']);
    expect(twice.code).toBe(2);
    expect(twice.err).toMatch(/--choice: Choice labels must be distinct/);
  });
});

describe('cookbook train decisions --dry-run', { timeout: 120_000 }, () => {
  it('shows each decision as the model reads it, the answer token it trains marked', async () => {
    const config = join(import.meta.dirname, '..', '..', 'configs', 'decisions_soft.json');
    const r = await cookbookProcess(['train', 'decisions', config, '--dry-run']).done;
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('choice#A = "billing": Charges, invoices, credits, payment methods and pricing');
    // The first row's most likely target is billing: choice#A at the answer position.
    expect(r.out).toMatch(/<\|im_start\|>assistant\n<think>\n\n<\/think>\n\nchoice#⟦A⟧/);
  });
});
