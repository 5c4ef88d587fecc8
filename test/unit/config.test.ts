import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveRun } from '../../src/cli/train.js';
import { applyOverrides, ConfigError, parseOverride } from '../../src/cookbook/config/overrides.js';

const dir = mkdtempSync(join(tmpdir(), 'cookbook-config-'));
const write = (name: string, body: unknown) => {
  const p = join(dir, name);
  writeFileSync(p, typeof body === 'string' ? body : JSON.stringify(body));
  return p;
};
writeFileSync(join(dir, 'chat.jsonl'), '{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}\n');
const base = { model_name: 'tiny-qwen3', dataset: { file_path: 'chat.jsonl', batch_size: 2, max_length: 64 } };

describe('overrides', () => {
  it('parses JSON values and keeps bare words as strings', () => {
    expect(parseOverride('a.b=3')).toEqual([['a', 'b'], 3]);
    expect(parseOverride('x=true')).toEqual([['x'], true]);
    expect(parseOverride('x=null')).toEqual([['x'], null]);
    expect(parseOverride('name=tiny-qwen3')).toEqual([['name'], 'tiny-qwen3']);
    expect(parseOverride('lr=1e-4')).toEqual([['lr'], 1e-4]);
  });
  it('sets dotted keys, creating objects on the way', () => {
    expect(applyOverrides({ a: { b: 1 } }, ['a.c=2', 'd.e=x'])).toEqual({ a: { b: 1, c: 2 }, d: { e: 'x' } });
  });
  it('indexes into lists: sets a key of an element, replaces or appends an element', () => {
    const cfg = { dataset_configs: [{ dataset: { file_path: 'a.jsonl' } }, { dataset: { file_path: 'b.jsonl' } }], tags: ['x'] };
    expect(applyOverrides(cfg, ['dataset_configs.1.dataset.file_path=c.jsonl', 'tags.0=y', 'tags.1=z'])).toEqual({
      dataset_configs: [{ dataset: { file_path: 'a.jsonl' } }, { dataset: { file_path: 'c.jsonl' } }],
      tags: ['y', 'z'],
    });
    expect(cfg.dataset_configs[1].dataset.file_path).toBe('b.jsonl');
  });
  it('a segment that is not an index into the list names the override, the list and the valid indices', () => {
    const cfg = { dataset_configs: [{ dataset: {} }], tags: [] as string[], names: ['a'] };
    expect(() => applyOverrides(cfg, ['dataset_configs.1.dataset.file_path=x'])).toThrow(
      /override "dataset_configs\.1\.dataset\.file_path=x": "dataset_configs" is a list of 1, "1" is not an index into it \(indices are 0\.\.0\)/,
    );
    expect(() => applyOverrides(cfg, ['dataset_configs.file_path=x'])).toThrow(/"dataset_configs" is a list of 1, "file_path" is not an index/);
    expect(() => applyOverrides(cfg, ['dataset_configs.-1.x=1'])).toThrow(/"-1" is not an index/);
    expect(() => applyOverrides(cfg, ['tags.0.x=1'])).toThrow(/"tags" is a list of 0, "0" is not an index into it \(it is empty\)/);
    expect(() => applyOverrides(cfg, ['names.0.x=1'])).toThrow(/"names\.0" is not an object or a list/);
  });
  it('rejects malformed overrides with the offending text', () => {
    expect(() => parseOverride('novalue')).toThrow(/"novalue" is not of the form key=value/);
    expect(() => applyOverrides({ a: 1 }, ['a.b=2'])).toThrow(/"a" is not an object/);
  });
});

describe('resolveRun', () => {
  it("an override into a list reaches the element, and its file path resolves and is checked like the config's own", () => {
    writeFileSync(join(dir, 'prompts.jsonl'), '{"prompt":"hi"}\n');
    const cfg = join(process.cwd(), 'configs', 'distill_on_policy.json');
    const r = resolveRun('distill', cfg, [`dataset_configs.0.dataset.file_path=${join(dir, 'prompts.jsonl')}`, 'dataset_configs.0.groups_per_batch=2']);
    expect(r.config.dataset_configs[0].dataset.file_path).toBe(join(dir, 'prompts.jsonl'));
    expect(r.config.dataset_configs[0].groups_per_batch).toBe(2);
    expect(() => resolveRun('distill', cfg, [`dataset_configs.0.dataset.file_path=${join(dir, 'missing.jsonl')}`])).toThrow(/dataset_configs\.0\.dataset\.file_path/);
  });
  it('a run on another server with its store in a bucket (configs/sl_skyrl_tx.json): the URI kept, the server named', () => {
    const r = resolveRun('sl', join(process.cwd(), 'configs', 'sl_skyrl_tx.json'), [], { workflowId: 'sl-remote' });
    expect(r.run.logPath).toBe('s3://my-team-runs/sl-skyrl-tx');
    expect(r.config).toMatchObject({ base_url: 'http://skyrl-tx.internal:8000', model_name: 'Qwen/Qwen3-8B', renderer_name: 'qwen3', log_path: 's3://my-team-runs/sl-skyrl-tx' });
    // No log_path: the runs dir may be a bucket too, the run under it by id.
    const under = resolveRun('sl', join(process.cwd(), 'configs', 'sl_demo.json'), [], { workflowId: 'sl-x', runsDir: 's3://my-team-runs/runs/' });
    expect(under.run.logPath).toBe('s3://my-team-runs/runs/sl-x');
  });

  it('fills defaults, resolves paths against the config file, and names the workflow', () => {
    const r = resolveRun('sl', write('ok.json', base), ['learning_rate=0.001', 'dataset.batch_size=4']);
    expect(r.workflowId).toMatch(/^sl-ok-\d{8}-\d{6}$/);
    expect(r.config.learning_rate).toBe(0.001);
    expect(r.config.dataset.batch_size).toBe(4);
    expect(r.config.dataset.file_path).toBe(join(dir, 'chat.jsonl'));
    expect(r.config).toMatchObject({ lr_schedule: 'linear', num_epochs: 1, lora_rank: 32, save_every: 20, eval_every: 10, adam_beta2: 0.95 });
    expect(r.config.log_path).toMatch(/runs\/sl-ok-/);
  });
  it('names the offending path of every zod error', () => {
    const p = write('bad.json', { ...base, learning_rat: 1, num_epochs: 'two', dataset: { ...base.dataset, batch_size: -1 } });
    let message = '';
    try {
      resolveRun('sl', p, []);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toContain(`${p}: learning_rat: unknown config key; did you mean learning_rate?`);
    expect(message).toMatch(/num_epochs: .*number/i);
    expect(message).toMatch(/dataset\.batch_size: /);
    expect(message).toContain(p);
  });
  it('suggests the closest known key wherever it is nested, and none for a key like no other', () => {
    const p = write('typos.json', { ...base, dataset: { ...base.dataset, batch_sise: 2 }, evaluators: [{ kind: 'benchmark', suite: 'ifeval', limt: 3 }] });
    const message = (() => {
      try {
        resolveRun('sl', p, ['zzzzzz=1']);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('expected a config error');
    })();
    expect(message).toContain(`${p}: dataset.batch_sise: unknown config key; did you mean dataset.batch_size?`);
    expect(message).toContain(`${p}: evaluators.0.limt: unknown config key; did you mean evaluators.0.limit?`);
    expect(message).toMatch(/zzzzzz: unknown config key$/m);
  });
  it('blames a bad command-line override on the override, not on the config file', () => {
    const p = write('good.json', base);
    expect(() => resolveRun('sl', p, ['learning_rat=1'])).toThrow(/^command-line override learning_rat=1: learning_rat: unknown config key; did you mean learning_rate\?$/);
    expect(() => resolveRun('sl', p, ['dataset.batch_size=0'])).toThrow(/^command-line override dataset\.batch_size=0: dataset\.batch_size: /);
    expect(() => resolveRun('sl', p, ['dataset={"file_path": "chat.jsonl", "batch_size": 2, "max_lenght": 9}'])).toThrow(/^command-line override dataset=.*: dataset\.max_lenght: unknown config key; did you mean dataset\.max_length\?$/);
    // The file's own mistake still names the file, beside an override that is fine.
    const bad = write('bad-epochs.json', { ...base, num_epochs: 'two' });
    expect(() => resolveRun('sl', bad, ['learning_rate=0.001'])).toThrow(new RegExp(`^${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: num_epochs: `));
  });
  it('reports a missing dataset file, a missing config and broken JSON clearly', () => {
    expect(() => resolveRun('sl', write('nofile.json', { ...base, dataset: { ...base.dataset, file_path: 'nope.jsonl' } }), [])).toThrow(/dataset.file_path: .*nope.jsonl does not exist/);
    expect(() => resolveRun('sl', join(dir, 'missing.json'), [])).toThrow(/missing.json does not exist/);
    expect(() => resolveRun('sl', write('broken.json', '{"model_name": '), [])).toThrow(/broken.json is not valid JSON/);
    expect(() => resolveRun('xx', write('k.json', base), [])).toThrow(/unknown run kind "xx"/);
  });
});
