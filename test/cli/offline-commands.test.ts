// CLI commands that need neither Temporal nor a backend: `cookbook models` (every served model with
// its default renderer, tokenizer source and LR hint) and `cookbook train … --dry-run`.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVED_MODELS } from '../../src/cookbook/model-info.js';
import { cookbookProcess } from '../support/cli.js';
import { refusingPort } from '../support/free-port.js';

/** The CLI in a child process, awaited: a spawnSync would stall this process's event loop, and the test runner's messages with it. */
const cookbook = async (...args: string[]) => {
  const { code, out, err } = await cookbookProcess(args).done;
  return { status: code, stdout: out, stderr: err };
};

describe('cookbook models without an engine', () => {
  let noEngine: string;
  let release: () => void;
  beforeAll(async () => {
    // Held refusing for these tests: a port merely free now could be taken by a server that answers.
    const held = await refusingPort();
    noEngine = `http://127.0.0.1:${held.port}`;
    release = held.release;
  });
  afterAll(() => release?.());

  it('lists the catalogue, labelled so, with each model\'s default renderer and where its tokenizer comes from', async () => {
    const r = await cookbook('models', '--engine-url', noEngine);
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(`models (catalogue; engine not reachable at ${noEngine}: ECONNREFUSED):`);
    for (const m of SERVED_MODELS) expect(r.stdout).toContain(m.name);
    const line = (name: string) => r.stdout.split('\n').find((l) => l.startsWith(`${name} `))!;
    expect(line('Qwen/Qwen3-8B')).toMatch(/shipped \(qwen3\)\s+0\.000473\s+qwen3, qwen3_disable_thinking$/);
    expect(line('moonshotai/Kimi-K2.6')).toMatch(/tokenizer_path\s+-\s+kimi_k26/);
  });

  it('details one model, and names the organization of an unknown one', async () => {
    const one = await cookbook('models', 'meta-llama/Llama-3.2-1B', '--engine-url', noEngine);
    expect(one.status).toBe(0);
    expect(one.stdout).toMatch(new RegExp(`^served by +\\(catalogue; engine not reachable at ${noEngine}: ECONNREFUSED\\)$`, 'm'));
    expect(one.stdout).toMatch(/renderers\s+role_colon/);
    expect(one.stdout).toMatch(/LoRA params at rank 32\s+26,714,112/);
    // A built-in model's shape is the engine's to tell: the catalogue row it borrows from is another model's.
    const tiny = await cookbook('models', 'tiny-qwen3', '--engine-url', noEngine);
    expect(tiny.status).toBe(0);
    expect(tiny.stdout).toMatch(/^stands in for +Qwen\/Qwen3-8B/m);
    expect(tiny.stdout).not.toMatch(/^(size|hidden size) +(8B|4096)/m);
    const bad = await cookbook('models', 'acme/Thing-1B', '--engine-url', noEngine);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/organization "acme" is not served/);
  });
});

describe('cookbook train --dry-run', () => {
  const config = path.join(__dirname, '..', '..', 'configs', 'sl_demo.json');

  it('renders the first datums with the model\'s renderer, the top-level renderer_name applied, trained tokens marked', async () => {
    const llama = await cookbook('train', 'sl', config, 'model_name=meta-llama/Llama-3.1-8B-Instruct', '--dry-run');
    expect(llama.status, llama.stderr).toBe(0);
    expect(llama.stdout).toContain('renderer llama3, tokenizer llama3');
    expect(llama.stdout).toMatch(/<\|start_header_id\|>assistant<\|end_header_id\|>\n\n⟦[^⟧]+<\|eot_id\|>⟧/);
    const colon = await cookbook('train', 'sl', config, 'model_name=Qwen/Qwen3-8B', 'renderer_name=role_colon', '--dry-run');
    expect(colon.status, colon.stderr).toBe(0);
    expect(colon.stdout).toContain('renderer role_colon, tokenizer qwen3');
    expect(colon.stdout).toMatch(/Assistant:⟦ [^⟧]+\n\nUser:⟧/);
    expect(colon.stderr).toMatch(/warning: Renderer role_colon is not recommended for model Qwen\/Qwen3-8B \(recommended: qwen3, qwen3_disable_thinking\)/);
    expect(llama.stderr).not.toMatch(/warning/);
  });

  it('the shipped demo config trains as the renderer expects: no warning', async () => {
    // Qwen3's renderer frames only the last assistant turn as sampling does: training earlier turns
    // (all_assistant_messages, the default) draws the reference's warning, once per process.
    const demo = await cookbook('train', 'sl', config, '--dry-run');
    expect(demo.status, demo.stderr).toBe(0);
    expect(demo.stderr).not.toMatch(/warn|\[cookbook\]/i);
    const all = await cookbook('train', 'sl', config, 'dataset.train_on_what=all_assistant_messages', '--dry-run');
    expect(all.stderr).toMatch(/\[cookbook\] train_on_what=all_assistant_messages with renderer "qwen3", which lacks the extension property/);
  });

  it('shows an image once where it sits, with its token count, not as the zero targets under it', async () => {
    const vlm = await cookbook('train', 'sl', path.join(path.dirname(config), 'vlm_classifier.json'), '--dry-run');
    expect(vlm.status, vlm.stderr).toBe(0);
    expect(vlm.stdout).toContain('renderer qwen3_vl_instruct, tokenizer qwen3');
    expect(vlm.stdout).toMatch(/<\|im_start\|>user\n<\|vision_start\|>\[image 1: 16 tokens\]<\|vision_end\|>What is the name of the subject in this photo\?/);
    expect(vlm.stdout).toMatch(/⟦The subject in this photo is: (red|green|blue) (circle|square|triangle)\n<\|im_end\|>⟧/);
    expect(vlm.stdout).not.toContain('!!!!');
  });

  it('fixes the date that gpt-oss system prompts print for the whole run', async () => {
    const pinned = await cookbook('train', 'sl', config, 'model_name=openai/gpt-oss-20b', 'renderer_name=gpt_oss_medium_reasoning', 'render_date=2026-01-02', '--dry-run');
    expect(pinned.status, pinned.stderr).toBe(0);
    expect(pinned.stdout).toContain('Current date: 2026-01-02');
    const today = await cookbook('train', 'sl', config, 'model_name=openai/gpt-oss-20b', '--dry-run');
    expect(today.stdout).toMatch(/"render_date": "\d{4}-\d{2}-\d{2}"/);
    const pipeline = await cookbook('train', 'pipeline', path.join(path.dirname(config), 'pipeline_sft_dpo.json'), '--dry-run');
    expect(pipeline.status, pipeline.stderr).toBe(0);
    expect(pipeline.stdout.match(/"render_date": "\d{4}-\d{2}-\d{2}"/g)).toHaveLength(2); // one per stage
  });

  it('names tokenizer_path when the model\'s tokenizer is not shipped', async () => {
    const r = await cookbook('train', 'sl', config, 'model_name=zai-org/GLM-5.3', '--dry-run');
    expect(r.status).toBe(2); // a config error
    expect(r.stderr).toMatch(/No offline tokenizer for model "zai-org\/GLM-5.3".*set tokenizer_path/);
    const missing = await cookbook('train', 'sl', config, 'tokenizer_path=./no/such/folder', '--dry-run');
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/tokenizer_path: .*no\/such\/folder does not exist/);
  });
});
