// The rubric recipe beside the reference's (tinker-cookbook 0.6.1, run at test time): generate_data's
// files byte for byte for several seeds, the Prometheus datapoints built from the same rows (the
// shipped three-row copy in the Feedback Collection's layout), their policy prompts and grader
// prompts, Rubric.get_grader_prompt / extract_score on the same strings, and RubricGradedEnv.step
// with a grader scripted to the same replies (reward, metrics, format, what the grader was asked);
// configs/rl_rubric_prometheus.json holds prometheus_experimental's CLIConfig defaults.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { getRenderer } from '../../src/cookbook/renderers/registry.js';
import type { Message } from '../../src/cookbook/renderers/types.js';
import { extractScore, graderPrompt, RubricDatapointSchema, RubricGradedEnv, RubricSchema, type RubricDatapoint } from '../../src/cookbook/rl/envs/rubric.js';
import { RUBRIC_TEST_FILE, RUBRIC_TRAIN_FILE, rubricDatapointJson, writeRubricDataset } from '../../src/cookbook/rl/envs/rubric-generate.js';
import { loadPrometheusDatapoints } from '../../src/cookbook/rl/envs/rubric-prometheus.js';
import { getTokenizer, shippedTokenizerDir } from '../../src/cookbook/tokenizer.js';
import { runPythonScript } from './reference.js';

const REPO = join(import.meta.dirname, '..', '..');
const PROMETHEUS_DIR = join(REPO, 'data/rubric/prometheus_sample');
const COMPLETION = 'Day one: the old town. Day two: the market.';

const GENERATE = [
  { num_train: 5, num_test: 3, seed: 42 },
  { num_train: 0, num_test: 2, seed: 0 },
  { num_train: 40, num_test: 0, seed: 123456789 },
];
const SCORE_RUBRIC = { rubric_str: 'r' };
const SCORES: Array<{ rubric: Record<string, string>; response: string }> = [
  { rubric: SCORE_RUBRIC, response: 'Fine. <score>0.75</score>' },
  { rubric: SCORE_RUBRIC, response: '<score> 1 </score> and <score>0</score>' },
  { rubric: SCORE_RUBRIC, response: '<score>\n4.0\n</score>' },
  { rubric: SCORE_RUBRIC, response: '<score>1e-1</score>' },
  { rubric: SCORE_RUBRIC, response: '<score>1_0</score>' },
  { rubric: SCORE_RUBRIC, response: '<score>high</score>' },
  { rubric: SCORE_RUBRIC, response: 'no score at all' },
  { rubric: { rubric_str: 'r', extraction_regex: 'Score: (\\d+)/5' }, response: 'Score: 4/5' },
];
const GRADER_PROMPTS: Array<{ rubric: Record<string, string>; convo: Message[] }> = [
  { rubric: { rubric_str: 'Greets Ada.' }, convo: [{ role: 'user', content: 'Say hi to Ada.' }, { role: 'assistant', content: 'Hi Ada!' }] },
  { rubric: { rubric_str: 'Terse.', grader_output_format_instruction: 'Answer 0 or 1 in <score></score>.' }, convo: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }, { role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' }] },
  { rubric: { rubric_str: 'Only a completion.' }, convo: [{ role: 'assistant', content: 'alone' }] },
];
const TWO_ITEMS: RubricDatapoint = RubricDatapointSchema.parse({
  convo: [{ role: 'user', content: 'What is the capital of France? One word.' }],
  rubric_items: [{ rubric_str: 'Says Paris.' }, { rubric_str: 'One word.', grader_output_format_instruction: 'Score 0 to 1 in <score></score>.' }],
});
const STEPS = [
  { datapoint: TWO_ITEMS, action: 'Paris<|im_end|>', grader_replies: ['<score>1</score>', 'ok <score>0.5</score>'] },
  { datapoint: TWO_ITEMS, action: 'Paris, of course', grader_replies: ['<score>0.25</score>', 'unreadable'] },
];

let reference: {
  generated: Array<{ train: string; test: string }>;
  prometheus: Array<{ json: string; prompt: number[]; grader_prompt: string }>;
  grader_prompts: string[];
  scores: number[];
  cli_defaults: Record<string, unknown>;
  steps: Array<{ ob: number[]; reward: number; done: boolean; metrics: Record<string, number>; format_valid: number; grader_prompts: string[]; next_ob: number[] }>;
};
const dir = mkdtempSync(join(tmpdir(), 'h55play-rubric-'));

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({
    tokenizer_dir: shippedTokenizerDir('qwen3'),
    prometheus_dir: PROMETHEUS_DIR,
    completion: COMPLETION,
    generate: GENERATE,
    scores: SCORES,
    grader_prompts: GRADER_PROMPTS,
    steps: STEPS,
  });
  const env = { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', HF_DATASETS_OFFLINE: '1', HF_DATASETS_CACHE: join(dir, 'hf-datasets-cache') };
  const child = await runPythonScript(python, [join(import.meta.dirname, 'rubric_cases.py')], { env, input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const renderer = async () => getRenderer('qwen3', await getTokenizer('parity:qwen3', shippedTokenizerDir('qwen3')));

describe('the rubric recipe beside the reference', () => {
  it('generate_data: the same train and test files, byte for byte, for each seed and size', () => {
    GENERATE.forEach((c, i) => {
      const out = join(dir, `gen-${i}`);
      writeRubricDataset(c.num_train, c.num_test, c.seed, out);
      expect(readFileSync(join(out, RUBRIC_TRAIN_FILE), 'utf8')).toBe(reference.generated[i].train);
      expect(readFileSync(join(out, RUBRIC_TEST_FILE), 'utf8')).toBe(reference.generated[i].test);
    });
  });

  it('the shipped data/rubric files are generate_data’s (64 train, 8 test, seed 42)', () => {
    const out = join(dir, 'shipped');
    writeRubricDataset(64, 8, 42, out);
    for (const f of [RUBRIC_TRAIN_FILE, RUBRIC_TEST_FILE]) expect(readFileSync(join(REPO, 'data/rubric', f), 'utf8')).toBe(readFileSync(join(out, f), 'utf8'));
  });

  it('PrometheusDatapointListBuilder: the same datapoints from the same rows, the same policy and grader prompts', async () => {
    const datapoints = await loadPrometheusDatapoints({ path: PROMETHEUS_DIR });
    const r = await renderer();
    expect(datapoints.map(rubricDatapointJson)).toEqual(reference.prometheus.map((p) => p.json));
    expect(datapoints.map((d) => modelInputToInts(r.buildGenerationPrompt(d.convo)))).toEqual(reference.prometheus.map((p) => p.prompt));
    expect(datapoints.map((d) => graderPrompt(d.rubric_items[0], [...d.convo, { role: 'assistant', content: COMPLETION }])[0].content)).toEqual(reference.prometheus.map((p) => p.grader_prompt));
  });

  it('Rubric.get_grader_prompt and extract_score on the same strings', () => {
    expect(GRADER_PROMPTS.map((c) => graderPrompt(RubricSchema.parse(c.rubric), c.convo)[0].content)).toEqual(reference.grader_prompts);
    expect(SCORES.map((c) => extractScore(RubricSchema.parse(c.rubric), c.response))).toEqual(reference.scores);
  });

  it('RubricGradedEnv.step with the same grader replies: observation, reward, metrics, format, grader prompts', async () => {
    const r = await renderer();
    const tokenizer = await getTokenizer('parity:qwen3', shippedTokenizerDir('qwen3'));
    for (const [i, c] of STEPS.entries()) {
      const asked: string[] = [];
      const graders = c.grader_replies.map((reply) => async (messages: Message[]) => {
        asked.push(messages[0].content as string);
        return { role: 'assistant', content: reply } as Message;
      });
      const env = new RubricGradedEnv(r, c.datapoint, graders);
      const init = await env.initialObservation();
      const step = await env.step(tokenizer.encode(c.action, { addSpecialTokens: false }));
      const theirs = reference.steps[i];
      expect('ob' in init && modelInputToInts(init.ob)).toEqual(theirs.ob);
      expect(step.reward).toBe(theirs.reward);
      expect(step.episodeDone).toBe(theirs.done);
      expect(step.metrics).toEqual(theirs.metrics);
      expect(step.logs?.format_valid).toBe(theirs.format_valid);
      expect(asked).toEqual(theirs.grader_prompts);
      expect(modelInputToInts(step.nextObservation)).toEqual(theirs.next_ob);
    }
  });

  it('configs/rl_rubric_prometheus.json: prometheus_experimental’s CLIConfig defaults, where our config keeps each', async () => {
    const { RLConfigSchema } = await import('../../src/cookbook/config/rl.js');
    const cfg = RLConfigSchema.parse(JSON.parse(readFileSync(join(REPO, 'configs/rl_rubric_prometheus.json'), 'utf8')));
    const args = cfg.dataset.kind === 'custom' ? cfg.dataset.args : {};
    expect(cfg.dataset).toMatchObject({ kind: 'custom', name: 'rubric_prometheus' });
    const ours: Record<string, unknown> = {
      model_name: cfg.model_name,
      lora_rank: cfg.lora_rank,
      renderer_name: cfg.renderer_name,
      seed: cfg.seed,
      train_group_size: args.train_group_size,
      groups_per_batch: args.batch_size,
      learning_rate: cfg.learning_rate,
      max_tokens: cfg.max_tokens,
      temperature: cfg.temperature,
      kl_penalty_coef: cfg.kl_penalty_coef,
      grader_llm_name: args.grader_llm_name,
      grader_renderer_name: args.grader_renderer_name,
      num_substeps: cfg.num_substeps,
      compute_post_kl: cfg.compute_post_kl,
      eval_every: cfg.eval_every,
      save_every: cfg.save_every,
      loss_fn: cfg.loss_fn,
      max_steps: cfg.max_steps,
      load_checkpoint_path: cfg.load_checkpoint_path,
    };
    expect(ours).toEqual(reference.cli_defaults);
    expect(cfg.recipe_name).toBe('recipe_rubric_prometheus_experimental');
    expect(args.hf).toEqual({ path: 'prometheus-eval/Feedback-Collection' });
  });
});
