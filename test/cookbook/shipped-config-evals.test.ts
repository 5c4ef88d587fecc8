// Shipped RL configs (configs/*.json, pipeline stages included) evaluate before step 0 whenever
// eval_every > 0, as the reference does. That eval must not dwarf the step itself: the reference's
// guess_number test set (103 numbers × 4 samples = 412 ten-turn episodes) made a tiny-qwen3 run
// spend ~17 minutes before its first step on a 2-core machine. A shipped config's test set may
// sample at most as many episodes as its first training batch; the reference's full eval stays an
// override (configs/rl_guess_number.json: dataset.args.train_fraction=0.9
// dataset.args.test_group_size=4).
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RLConfigSchema } from '../../src/cookbook/config/rl.js';
import { buildRLDatasets } from '../../src/cookbook/rl/datasets.js';
import type { RLDataset } from '../../src/cookbook/rl/types.js';

const configsDir = resolve(import.meta.dirname, '..', '..', 'configs');

/** Every RL config shipped: the rl_*.json files and the inline rl stages of pipelines. */
function shippedRLConfigs(): Array<{ name: string; config: Record<string, unknown> }> {
  const out: Array<{ name: string; config: Record<string, unknown> }> = [];
  for (const file of readdirSync(configsDir).filter((f) => f.endsWith('.json')).sort()) {
    const json = JSON.parse(readFileSync(join(configsDir, file), 'utf8')) as Record<string, unknown>;
    if (file.startsWith('rl_')) out.push({ name: file, config: json });
    const stages = (json.stages ?? []) as Array<{ kind: string; config?: Record<string, unknown> }>;
    stages.forEach((s, i) => s.kind === 'rl' && s.config && out.push({ name: `${file} stage ${i}`, config: s.config }));
  }
  return out;
}

async function episodes(dataset: RLDataset, batches: number): Promise<number> {
  let n = 0;
  for (let b = 0; b < batches; b++) for (const group of dataset.getBatch(b)) n += (await group.makeEnvs()).length;
  return n;
}

/**
 * Shipped configs of the reference's full-size recipes, which need what this machine cannot have
 * offline (a hosted model's tokenizer, a Hub dataset); their datasets are built in their own tests
 * on local stand-ins.
 */
const NEEDS_HOSTED: Record<string, string> = {
  'rl_rubric_prometheus.json': 'Qwen/Qwen3.5-9B and the Hub Feedback Collection (test/cookbook/rl/rubric-prometheus.test.ts builds it on a local copy; it has no test split, so no eval before step 0)',
};

describe('shipped RL configs: the eval before step 0', () => {
  const configs = shippedRLConfigs();

  it('finds the shipped RL configs', () => {
    expect(configs.map((c) => c.name)).toEqual(expect.arrayContaining(['rl_guess_number.json', 'rl_guess_number_nudge.json', 'rl_tictactoe.json']));
  });

  for (const { name, config } of configs) {
    it.skipIf(name in NEEDS_HOSTED)(`${name}: evaluates no more episodes before step 0 than its first training batch holds${NEEDS_HOSTED[name] ? ` (skipped: needs ${NEEDS_HOSTED[name]})` : ''}`, async () => {
      const cfg = RLConfigSchema.parse(config);
      if (cfg.eval_every === 0) return; // no eval before step 0
      const { train, test } = await buildRLDatasets(cfg.dataset, cfg, { baseDir: resolve(configsDir, '..') });
      const trainEpisodes = await episodes(train, 1);
      const testEpisodes = test ? await episodes(test, test.length) : 0;
      expect(testEpisodes, `${name}: ${testEpisodes} test episodes before step 0 vs ${trainEpisodes} in a training batch`).toBeLessThanOrEqual(trainEpisodes);
    });
  }

  it("the reference's full guess_number eval stays one override away (and would fail the check above)", async () => {
    const shipped = JSON.parse(readFileSync(join(configsDir, 'rl_guess_number.json'), 'utf8'));
    const full = RLConfigSchema.parse({ ...shipped, dataset: { ...shipped.dataset, args: { ...shipped.dataset.args, train_fraction: 0.9, test_group_size: 4 } } });
    const { test } = await buildRLDatasets(full.dataset, full);
    expect(await episodes(test!, test!.length)).toBe(412);
    // The shipped split trains on the same numbers: the training set's head does not move.
    const cfg = RLConfigSchema.parse(shipped);
    const [a, b] = await Promise.all([buildRLDatasets(cfg.dataset, cfg), buildRLDatasets(full.dataset, full)]);
    const answers = (d: RLDataset, batches: number) => Array.from({ length: batches }, (_, i) => d.getBatch(i).map((g) => (g as unknown as { answer: number }).answer)).flat();
    expect(answers(a.train, cfg.max_steps!)).toEqual(answers(b.train, cfg.max_steps!));
  });
});
