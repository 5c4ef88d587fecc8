// `cookbook models`: every served model listed with its default renderer, tokenizer source and LR hint.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVED_MODELS } from '../../src/cookbook/model-info.js';

const bin = path.join(__dirname, '..', '..', 'bin', 'cookbook.mjs');
const cookbook = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });

describe('cookbook models', () => {
  it('lists every served model with its default renderer and where its tokenizer comes from', () => {
    const r = cookbook('models');
    expect(r.status).toBe(0);
    for (const m of SERVED_MODELS) expect(r.stdout).toContain(m.name);
    const line = (name: string) => r.stdout.split('\n').find((l) => l.startsWith(`${name} `))!;
    expect(line('Qwen/Qwen3-8B')).toMatch(/shipped \(qwen3\)\s+0\.000473\s+qwen3, qwen3_disable_thinking$/);
    expect(line('moonshotai/Kimi-K2.6')).toMatch(/tokenizer_path\s+-\s+kimi_k26/);
  });

  it('details one model, and names the organization of an unknown one', () => {
    const one = cookbook('models', 'meta-llama/Llama-3.2-1B');
    expect(one.status).toBe(0);
    expect(one.stdout).toMatch(/renderers\s+role_colon/);
    expect(one.stdout).toMatch(/LoRA params at rank 32\s+26,714,112/);
    const bad = cookbook('models', 'acme/Thing-1B');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/organization "acme" is not served/);
  });
});
