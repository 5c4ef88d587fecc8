// SDFT's datasets and config (the reference's recipes/sdft/datasets.py and sdft.Config): the same
// rows read from a JSONL file and from a Hugging Face layout folder (what `load_dataset` reads, as
// src/cookbook/hf reads it) give the same split; bad input is named; the shipped configs resolve.
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveRun } from '../../../src/cli/train.js';
import { SDFTConfigSchema } from '../../../src/cookbook/config/sdft.js';
import { loadSDFTData } from '../../../src/cookbook/distillation/sdft-data.js';

const data = join(import.meta.dirname, '..', '..', '..', 'data', 'sdft');
const configs = join(import.meta.dirname, '..', '..', '..', 'configs');
const parse = (dataset: Record<string, unknown>) => SDFTConfigSchema.parse({ model_name: 'tiny-qwen3', dataset }).dataset;

describe('SDFT data', () => {
  it('an hf source (a folder in the Hub layout) reads the same rows as the JSONL file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sdft-hf-'));
    mkdirSync(join(dir, 'data'));
    copyFileSync(join(data, 'sciknoweval_chemistry.jsonl'), join(dir, 'data', 'test-00000-of-00001.jsonl'));
    const fromFile = await loadSDFTData(parse({ kind: 'sciknoweval', file_path: join(data, 'sciknoweval_chemistry.jsonl') }));
    const fromHf = await loadSDFTData(parse({ kind: 'sciknoweval', hf: { path: dir, split: 'test' } }));
    expect(fromHf).toEqual(fromFile);
    // 40 chemistry L3 MCQs of 43 rows (another domain, level L2 and a true/false row left out); 90% trains.
    expect([fromFile.train.questions.length, fromFile.test.questions.length]).toEqual([36, 4]);
  });

  it('names what is wrong: both or neither source, a domain with no rows, a row without its field', async () => {
    expect(() => parse({ kind: 'toolalpaca' })).toThrow(/set exactly one of file_path and hf/);
    expect(() => parse({ kind: 'toolalpaca', file_path: 'x.jsonl', hf: { path: 'a/b' } })).toThrow(/set exactly one of file_path and hf/);
    await expect(loadSDFTData(parse({ kind: 'sciknoweval', file_path: join(data, 'sciknoweval_chemistry.jsonl'), domain: 'Physics' }))).rejects.toThrow(
      /sciknoweval_chemistry\.jsonl: no SciKnowEval examples for domain=Physics, level=L3, MCQ type \(of 43 rows\)/,
    );
    const bad = join(mkdtempSync(join(tmpdir(), 'sdft-bad-')), 'tool.jsonl');
    writeFileSync(bad, '{"instruction": "a", "output": "b"}\n{"output": "c"}\n');
    await expect(loadSDFTData(parse({ kind: 'toolalpaca', file_path: bad }))).rejects.toThrow(/tool\.jsonl:2: "instruction" must be a string/);
  });

  it("the config keeps sdft.Config's defaults and refuses reverse without top-K", () => {
    const cfg = SDFTConfigSchema.parse({ model_name: 'm', dataset: { kind: 'toolalpaca', file_path: 'x.jsonl' } });
    expect([cfg.lora_rank, cfg.learning_rate, cfg.max_tokens, cfg.temperature, cfg.loss_fn, cfg.topk, cfg.reverse, cfg.teacher_sync_every, cfg.max_context_length]).toEqual([
      128, 2e-5, 2048, 1.0, 'cross_entropy', 20, false, null, 32768,
    ]);
    expect([cfg.eval_every, cfg.save_every, cfg.num_substeps, cfg.system_prompt, cfg.recipe_name]).toEqual([20, 20, 1, null, 'recipe_sdft']);
    expect([cfg.dataset.groups_per_batch, cfg.dataset.group_size]).toEqual([32, 1]);
    expect(() => SDFTConfigSchema.parse({ model_name: 'm', topk: 0, reverse: true, dataset: { kind: 'toolalpaca', file_path: 'x.jsonl' } })).toThrow(/reverse=true requires topk>0/);
  });

  it('the shipped configs resolve', () => {
    for (const file of ['sdft_science.json', 'sdft_tooluse.json']) expect(resolveRun('sdft', join(configs, file), []).config.dataset.file_path).toMatch(/data\/sdft\//);
    expect(resolveRun('pipeline', join(configs, 'sdft_continual.json'), []).config.stages.map((s: { kind: string }) => s.kind)).toEqual(['sdft', 'sdft']);
  });
});
