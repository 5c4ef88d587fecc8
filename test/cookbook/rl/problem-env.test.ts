// §2.13 problem_env_test.py (RoleColon): strict vs lenient format, reward values, group builder;
// §3.2 arithmetic env with numpy legacy RandomState goldens.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { modelInputToInts } from '../../../src/cookbook/model-input.js';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import { ArithmeticDataset, ArithmeticEnv, arithmeticProblems } from '../../../src/cookbook/rl/envs/arithmetic.js';
import { LegacyRandomState } from '../../../src/cookbook/rl/mt19937.js';
import { ProblemEnv, ProblemGroupBuilder } from '../../../src/cookbook/rl/problem-env.js';
import { getTokenizer, type Tokenizer } from '../../../src/cookbook/tokenizer.js';

let tok: Tokenizer;
let renderer: Renderer;
beforeAll(async () => {
  tok = await getTokenizer('tiny-llama3');
  renderer = getRenderer('role_colon', tok);
});

class SimpleEnv extends ProblemEnv {
  getQuestion() {
    return 'What is 2+2?';
  }
  checkAnswer(content: string) {
    return content.includes('4');
  }
  checkFormat() {
    return true;
  }
  getReferenceAnswer() {
    return '4';
  }
}

const enc = (s: string) => tok.encode(s, { addSpecialTokens: false });

describe('ProblemEnv', () => {
  it('observes the rendered question with the renderer stop sequences', async () => {
    const env = new SimpleEnv(renderer, { convoPrefix: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] });
    const init = await env.initialObservation();
    expect(modelInputToInts(init.ob)).toEqual(
      modelInputToInts(
        renderer.buildGenerationPrompt([
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'hello' },
          { role: 'user', content: 'What is 2+2?' },
        ]),
      ),
    );
    expect(init.stopCondition).toEqual(['\n\nUser:']);
  });

  it('EOS-only ending: strict gives format 0 / reward 0.9, lenient format 1 / reward 1.0', async () => {
    const action = [...enc(' 4'), tok.eosTokenId];
    const strict = await new SimpleEnv(renderer).step(action);
    expect(strict.metrics).toEqual({ format: 0, correct: 1 });
    expect(strict.reward).toBeCloseTo(0.9, 12);
    const lenient = await new SimpleEnv(renderer, { requireStopSequenceForFormat: false }).step(action);
    expect(lenient.metrics).toEqual({ format: 1, correct: 1 });
    expect(lenient.reward).toBe(1.0);
    expect(strict.episodeDone).toBe(true);
    expect(modelInputToInts(strict.nextObservation)).toEqual([]);
  });

  it('"\\n\\nUser:" is well formatted in both modes', async () => {
    const action = enc(' 4\n\nUser:');
    for (const requireStopSequenceForFormat of [true, false]) {
      const r = await new SimpleEnv(renderer, { requireStopSequenceForFormat }).step(action);
      expect(r.metrics).toEqual({ format: 1, correct: 1 });
      expect(r.reward).toBe(1);
    }
  });

  it('a truncated response has format 0; wrong answers give 0 and −0.1', async () => {
    const truncated = await new SimpleEnv(renderer).step(enc(' 4 is the'));
    expect(truncated.metrics?.format).toBe(0);
    const wrongFormatted = await new SimpleEnv(renderer).step(enc(' 5\n\nUser:'));
    expect(wrongFormatted.reward).toBe(0);
    const wrongBad = await new SimpleEnv(renderer).step(enc(' 5'));
    expect(wrongBad.reward).toBeCloseTo(-0.1, 12);
  });

  it('ProblemGroupBuilder makes num_envs fresh envs, zero group rewards, dataset tag', async () => {
    const b = new ProblemGroupBuilder(() => new SimpleEnv(renderer), 3, 'toy');
    const envs = await b.makeEnvs();
    expect(envs).toHaveLength(3);
    expect(new Set(envs).size).toBe(3);
    expect(await b.computeGroupRewards([], [])).toEqual([]);
    expect(b.loggingTags()).toEqual(['toy']);
    expect(new ProblemGroupBuilder(() => new SimpleEnv(renderer), 1).loggingTags()).toEqual(['problems']);
  });
});

const numpy = JSON.parse(readFileSync(new URL('../../fixtures/rl_arithmetic_numpy.json', import.meta.url), 'utf8')) as {
  batches: Array<{ seed: number; pairs: Array<[number, number]> }>;
  raw_uint32: Record<string, number[]>;
};

describe('numpy legacy RandomState (MT19937)', () => {
  it('raw 32-bit outputs match numpy', () => {
    for (const [seed, values] of Object.entries(numpy.raw_uint32)) {
      const rng = new LegacyRandomState(Number(seed));
      expect(values.map(() => rng.nextUint32())).toEqual(values);
    }
  });
  it('randint(0, 101) pairs per batch match numpy', () => {
    for (const b of numpy.batches) expect(arithmeticProblems(b.seed, b.pairs.length)).toEqual(b.pairs);
  });
});

describe('ArithmeticEnv and ArithmeticDataset', () => {
  it('question, last-integer answer check, reference answer', () => {
    const env = new ArithmeticEnv(12, 30, renderer);
    expect(env.getQuestion()).toBe('What is 12 + 30?');
    expect(env.checkAnswer('The answer is 42')).toBe(true);
    expect(env.checkAnswer('41 no wait 42')).toBe(true);
    expect(env.checkAnswer('42 no wait 41')).toBe(false);
    expect(env.checkAnswer('no number')).toBe(false);
    expect(new ArithmeticEnv(600, 634, renderer).checkAnswer('1,234')).toBe(true);
    expect(new ArithmeticEnv(-5, 2, renderer).checkAnswer('-3')).toBe(true);
    expect(env.checkFormat('')).toBe(true);
    expect(env.getReferenceAnswer()).toBe('42');
  });
  it('batches are seeded by index, have batch_size groups of group_size envs and the few-shot prefix', async () => {
    const ds = new ArithmeticDataset(renderer, { batchSize: 8, groupSize: 3, nBatches: 5 });
    expect(ds.length).toBe(5);
    const batch = ds.getBatch(1);
    expect(batch).toHaveLength(8);
    const envs = await batch[0].makeEnvs();
    expect(envs).toHaveLength(3);
    const [x, y] = numpy.batches.find((b) => b.seed === 1)!.pairs[0];
    const env = envs[0] as ArithmeticEnv;
    expect([env.x, env.y]).toEqual([x, y]);
    expect(env.convoPrefix).toEqual(ArithmeticEnv.standardFewshotPrefix());
    const noShot = new ArithmeticDataset(renderer, { batchSize: 1, groupSize: 1, includeFewshot: false });
    expect(((await noShot.getBatch(0)[0].makeEnvs())[0] as ArithmeticEnv).convoPrefix).toEqual([]);
    expect(noShot.length).toBe(100);
  });
});
