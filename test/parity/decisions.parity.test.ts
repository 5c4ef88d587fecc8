// The decisions library beside the reference's (recipes/decisions, run at test time by
// decision_cases.py): for each renderer × tokenizer, the rendered tokens, the answer position and
// each label's token, and the hard- and soft-label datums, for several decisions and choice
// prefixes (refusals included; the library's logic is the renderer's template, so a few renderer
// families suffice); the Decision's own checks; and the probability loss (Brier):
// its value, metrics and gradient with respect to the logprobs to float32 rounding.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Datum } from '../../src/backends/types.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import { brierLoss, Decision, decisionChoiceDatums, decisionDistDatums, DecisionRenderer, PrefixedChoiceRenderer, probabilityLoss, type Choice } from '../../src/cookbook/supervised/decisions/index.js';
import { getTokenizer, shippedTokenizerDir, type Family } from '../../src/cookbook/tokenizer.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { outcome, runPythonScript, sameOutcome, type Outcome, type ReferenceCase } from './reference.js';
import { standInTokenizer } from './tokenizers.js';
import { fileURLToPath } from 'node:url';

const RENDERERS: Array<{ renderer: string; tokenizer: Family | { dir: string; label: string } }> = [
  { renderer: 'qwen3', tokenizer: 'qwen3' },
  { renderer: 'role_colon', tokenizer: 'qwen3' },
  { renderer: 'llama3', tokenizer: 'llama3' },
  { renderer: 'deepseekv3', tokenizer: 'deepseek_v3' },
  { renderer: 'qwen3_8_low_reasoning', tokenizer: standInTokenizer('qwen3.5') },
  { renderer: 'kimi_k2', tokenizer: standInTokenizer('kimi') },
];
const dirOf = (t: (typeof RENDERERS)[number]['tokenizer']) => (typeof t === 'string' ? shippedTokenizerDir(t) : t.dir);
const labelOf = (r: (typeof RENDERERS)[number]) => `${r.renderer} × ${typeof r.tokenizer === 'string' ? r.tokenizer : r.tokenizer.label}`;

interface RenderInput {
  text: string;
  choices: Array<[string, string]>;
  prefix?: string;
  placeholder?: string;
  target?: string;
  target_probs?: Record<string, number>;
}
interface LossInput {
  data: Array<{ target_tokens: number[]; weights: number[]; shape: [number, number] }>;
  logprobs: number[][];
}
let cases: { renderings: ReferenceCase<RenderInput, Outcome>[][]; losses: ReferenceCase<LossInput, Outcome<any>>[]; decisions: ReferenceCase<{ choices: Choice[] }, Outcome>[] };

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const script = fileURLToPath(new URL('./decision_cases.py', import.meta.url));
  const args = JSON.stringify({ renderers: RENDERERS.map((r) => ({ renderer: r.renderer, tokenizer_dir: dirOf(r.tokenizer) })) });
  const out = await runPythonScript(python, [script, args], { env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' } });
  if (out.status !== 0) throw new Error(`decision_cases.py exited ${out.status}:\n${out.stderr.slice(-4000)}`);
  cases = JSON.parse(out.stdout);
}, 300_000);

const datumJson = (d: Datum) => ({
  model_input: d.model_input.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : [])),
  ...Object.fromEntries(Object.entries(d.loss_fn_inputs).map(([k, t]) => [k, { data: t.data, shape: t.shape }])),
});

describe.each(RENDERERS.map((r, i) => [labelOf(r), r, i] as const))('decisions rendered by %s', (label, r, index) => {
  it('every rendering and datum equals the reference’s (or both refuse)', async () => {
    const tokenizer = await getTokenizer(`parity:${label}`, dirOf(r.tokenizer));
    const renderer = getRenderer(r.renderer, tokenizer);
    const mine = (input: RenderInput) => new DecisionRenderer(renderer, tokenizer, input.prefix === undefined ? undefined : new PrefixedChoiceRenderer(tokenizer, input.prefix, input.placeholder));
    const decision = (input: RenderInput) => new Decision(input.text, input.choices);
    const rendered = cases.renderings[index];
    expect(rendered.length).toBeGreaterThan(20);
    for (const c of rendered) {
      const kind = c.id.split('/')[0];
      const ts = outcome((): unknown => {
        if (kind === 'render') {
          const got = mine(c.input).render(decision(c.input));
          return { tokens: got.tokens, choice_pos: got.choicePos, label_tokens: [...got.labelTokens.entries()] };
        }
        if (kind === 'choice_datums') return decisionChoiceDatums(mine(c.input), [[decision(c.input), c.input.target!]]).map(datumJson);
        return decisionDistDatums(mine(c.input), [[decision(c.input), c.input.target_probs!]]).map(datumJson);
      });
      const { ts: got, ref } = sameOutcome(ts, c.expected);
      expect(got, `${label} ${c.id}\nreference: ${JSON.stringify(c.expected).slice(0, 600)}\nours: ${JSON.stringify(ts).slice(0, 600)}`).toEqual(ref);
      // A refusal says the same thing (messages are the reference's, in its quoting).
      if ('error' in c.expected && 'error' in ts) expect(ts.message.replace(/\s+/g, ' ')).toBe(c.expected.message.replace(/\s+/g, ' '));
    }
  });
});

describe('the Decision', () => {
  it('needs two distinct labels, as the reference’s', () => {
    for (const c of cases.decisions) {
      const ts = outcome(() => new Decision('q', c.input.choices).labels);
      expect(sameOutcome(ts, c.expected).ts, c.id).toEqual(sameOutcome(ts, c.expected).ref);
      if ('error' in c.expected && 'error' in ts) expect(ts.message).toBe(c.expected.message);
    }
  });
});

/** float32 rounding apart: torch's vectorised exp and sums differ from ours in the last bits. */
const close = (a: number, b: number) => Math.abs(a - b) <= 2e-6 * Math.max(1e-3, Math.abs(a), Math.abs(b));

describe('the probability loss (Brier)', () => {
  it('loss, metrics and the gradient in the logprobs equal the reference’s', () => {
    expect(cases.losses.length).toBeGreaterThanOrEqual(5);
    for (const c of cases.losses) {
      const data: Datum[] = c.input.data.map((d) => ({
        model_input: { chunks: [{ type: 'encoded_text', tokens: new Array<number>(d.shape[0]).fill(1) }] },
        loss_fn_inputs: { target_tokens: { data: d.target_tokens, dtype: 'int64', shape: d.shape }, weights: { data: d.weights, dtype: 'float32', shape: d.shape } },
      }));
      const got = probabilityLoss(brierLoss)(data, c.input.logprobs);
      const ref = (c.expected as { ok: { loss: number; metrics: Record<string, number>; grads: number[][] } }).ok;
      expect(close(got.loss, ref.loss), `${c.id} loss ${got.loss} vs ${ref.loss}`).toBe(true);
      expect(Object.keys(got.metrics).sort()).toEqual(Object.keys(ref.metrics).sort());
      expect(got.metrics.accuracy, c.id).toBe(ref.metrics.accuracy);
      expect(close(got.metrics['target_prob:mean'], ref.metrics['target_prob:mean']), c.id).toBe(true);
      got.grads.forEach((g, i) => g.forEach((x, j) => expect(Math.abs(x - ref.grads[i][j]) <= 1e-7 + 2e-6 * Math.abs(ref.grads[i][j]), `${c.id} grad[${i}][${j}] ${x} vs ${ref.grads[i][j]}`).toBe(true)));
    }
  });
});
