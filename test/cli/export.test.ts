// `cookbook export` against the real engine: train a LoRA a few steps, save sampler weights, export
// them through the protocol's archive download as a PEFT adapter and as a merged checkpoint, load
// both with peft / transformers in the engine's Python environment and get the engine's logprobs;
// `--publish --dry-run` with the run's records in the model card, and the flags' refusals.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend, type TinkerBackend } from '../../src/backends/tinker-backend.js';
import { exportCheckpoint, type ExportOptions } from '../../src/cli/export.js';
import { engineForFile, type FileEngine } from '../support/engine.js';
import { sftDatum } from '../backends/helpers.js';
import { ENGINE_DIR, engineProcessEnv, ensureEngineEnv } from '../../src/stack/engine-env.mjs';

const MODEL = 'tiny-qwen3';
const BIN = join(__dirname, '..', '..', 'bin', 'cookbook.mjs');
// A chat-formatted Qwen3 prompt: "<|im_start|>user\nHello, how are you?<|im_end|>\n<|im_start|>assistant\n"
const TOKENS = [151644, 872, 198, 9707, 11, 1246, 525, 498, 30, 151645, 198, 151644, 77091, 198];
const TOL = 2e-4;

// Loads an export with transformers (merged) or peft over the engine's tiny base model (peft) and
// prints the prompt logprobs of TOKENS, as compute_logprobs defines them (first position: null).
const LOADER = `
import json, sys, torch
kind, folder, tokens = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if kind == "merged":
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
else:
    from peft import PeftModel
    from tinker_engine.base_models import BUILTIN_MODELS, BaseModelCache
    base_name = json.load(open(folder + "/adapter_config.json"))["base_model_name_or_path"]
    base = BaseModelCache(torch.device("cpu"), torch.float32)._load(BUILTIN_MODELS[base_name]())
    model = PeftModel.from_pretrained(base, folder)
model.eval()
with torch.no_grad():
    lp = torch.log_softmax(model(torch.tensor([tokens])).logits[0].float(), dim=-1)
print(json.dumps([None] + [lp[i - 1, tokens[i]].item() for i in range(1, len(tokens))]))
`;

let python: string;
async function loadAndScore(kind: 'peft' | 'merged', folder: string): Promise<Array<number | null>> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-c', LOADER, kind, folder, JSON.stringify(TOKENS)], {
      cwd: ENGINE_DIR,
      env: engineProcessEnv({ HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' }),
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!)) : reject(new Error(`loader exit ${code}: ${err}`))));
  });
}

function maxDiff(a: Array<number | null>, b: Array<number | null>): number {
  expect(a.length).toBe(b.length);
  expect(a[0]).toBeNull();
  expect(b[0]).toBeNull();
  return Math.max(...a.slice(1).map((x, i) => Math.abs((x as number) - (b[i + 1] as number))));
}

function cookbook(...args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, TINKER_BASE_URL: engine.baseUrl };
  delete env.HF_TOKEN;
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env });
}

/** The CLI without blocking the test worker (a merged export takes a while on a loaded machine). */
function cookbookAsync(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, TINKER_BASE_URL: engine.baseUrl };
  delete env.HF_TOKEN;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** A run folder as a run of this project leaves it, whose checkpoints.jsonl lists `path` at step 2. */
function fakeRun(dir: string, path: string): void {
  mkdirSync(join(dir, '.cookbook'), { recursive: true });
  writeFileSync(join(dir, '.cookbook', 'run.json'), JSON.stringify({ workflowId: 'sl-export-test', kind: 'sl', config: {} }));
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({ model_name: MODEL, learning_rate: 0.05, lora_rank: 4, log_path: dir, base_url: 'http://x', dataset: { hf: { path: 'HuggingFaceH4/no_robots', split: 'train' } } }),
  );
  writeFileSync(join(dir, 'metrics.jsonl'), ['{"step": 1, "train_mean_nll": 2.5}', '{"step": 2, "train_mean_nll": 1.75, "time/total": 3.0}', '{"step": 3, "train_mean_nll": 1.5}'].join('\n') + '\n');
  writeFileSync(join(dir, 'checkpoints.jsonl'), `${JSON.stringify({ name: 'for-export', batch: 2, sampler_path: path })}\n`);
}

let engine: FileEngine;
let backend: TinkerBackend;
let work: string;
let checkpoint: string;
let engineLogprobs: Array<number | null>;

describe('cookbook export', () => {
  beforeAll(async () => {
    python = (await ensureEngineEnv()).python;
    work = mkdtempSync(join(tmpdir(), 'export-test-'));
    engine = await engineForFile();
    backend = createTinkerBackend({ baseUrl: engine.baseUrl, apiKey: 'tml-export', env: {} });
    const s = await backend.createTrainingSession({ baseModel: MODEL, lora: { rank: 4, seed: 3 } });
    const data = [sftDatum([101, 102, 103, 104, 105, 106]), sftDatum([201, 202, 203, 204, 205])];
    let seq = 1;
    for (let i = 0; i < 2; i++) {
      const fb = await s.forwardBackward(data, 'cross_entropy', { seqId: seq });
      const opt = await s.optimStep({ learning_rate: 5e-2 }, { seqId: seq + fb.seqIds });
      await Promise.all([fb.result(), opt.result()]);
      seq += fb.seqIds + opt.seqIds;
    }
    checkpoint = (await (await s.saveWeightsForSampler('for-export', { seqId: seq })).result()).path;
    const sampler = await backend.createSamplingSession({ modelPath: checkpoint });
    engineLogprobs = await sampler.computeLogprobs({ chunks: [{ type: 'encoded_text', tokens: TOKENS }] });
  }, 10 * 60_000);

  afterAll(async () => {
    await backend?.close();
    await engine?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the trained adapter matters: base-model logprobs differ from the checkpoint', async () => {
    const base = await backend.createSamplingSession({ baseModel: MODEL });
    const baseLps = await base.computeLogprobs({ chunks: [{ type: 'encoded_text', tokens: TOKENS }] });
    expect(maxDiff(baseLps, engineLogprobs)).toBeGreaterThan(1e-2);
  });

  it('--format peft: a PEFT adapter folder that peft loads, giving the engine logprobs', async () => {
    const out = join(work, 'peft');
    const r = await exportCheckpoint({ checkpoint, format: 'peft', out, baseUrl: engine.baseUrl });
    expect(r.baseModel).toBe(MODEL);
    expect(r.files).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    const config = JSON.parse(readFileSync(join(out, 'adapter_config.json'), 'utf8'));
    expect(config).toMatchObject({ base_model_name_or_path: MODEL, r: 4, lora_alpha: 32, peft_type: 'LORA', task_type: 'CAUSAL_LM' });
    expect(config.target_modules).toEqual(['down_proj', 'gate_proj', 'k_proj', 'lm_head', 'o_proj', 'q_proj', 'up_proj', 'v_proj']);
    expect(maxDiff(await loadAndScore('peft', out), engineLogprobs)).toBeLessThan(TOL);
  });

  it('--format merged via the CLI: a Hugging Face checkpoint transformers loads offline, giving the engine logprobs', async () => {
    const out = join(work, 'merged');
    mkdirSync(out); // an existing empty directory is accepted
    const r = cookbook('export', checkpoint, '--format', 'merged', '--out', out);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`merged Hugging Face checkpoint written to ${out}`);
    const files = readdirSync(out);
    expect(files).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']));
    expect(JSON.parse(readFileSync(join(out, 'generation_config.json'), 'utf8')).eos_token_id).toEqual([151645, 151643]);
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).tie_word_embeddings).toBe(false);
    expect(maxDiff(await loadAndScore('merged', out), engineLogprobs)).toBeLessThan(TOL);
  });

  it('--publish --dry-run: the adapter with its model card from the run, and the exact upload listed, nothing sent', async () => {
    const run = join(work, 'run-dir');
    fakeRun(run, checkpoint);
    const out = join(work, 'to-publish');
    const r = await cookbookAsync('export', checkpoint, '--format', 'peft', '--out', out, '--run', run, '--publish', 'me/tiny-qwen3-sft', '--dry-run', '--commit-message', 'tiny model');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const files = readdirSync(out).sort();
    expect(files).toEqual(['README.md', 'adapter_config.json', 'adapter_model.safetensors']);
    const listed = r.stdout.split('\n').filter((l) => /^\s+\d+\s{2}\S/.test(l)).map((l) => l.trim().split(/\s+/));
    expect(listed.map(([, f]) => f)).toEqual(files);
    for (const [bytes, f] of listed) expect(Number(bytes)).toBe(statSync(join(out, f)).size);
    const total = files.reduce((n, f) => n + statSync(join(out, f)).size, 0);
    expect(r.stdout).toContain(`dry run: nothing sent; the upload would send ${files.length} files, ${total} bytes, to https://huggingface.co/me/tiny-qwen3-sft (private), commit message "tiny model":`);
    expect(r.stdout).toContain(`model card filled from run ${run}`);
    const card = readFileSync(join(out, 'README.md'), 'utf8');
    for (const line of [`base_model: ${MODEL}`, 'library_name: peft', '- HuggingFaceH4/no_robots', '- sft', '# me/tiny-qwen3-sft', '- **Recipe:** sl (durable-cookbook run `sl-export-test`)', '- **Data:** HuggingFaceH4/no_robots (train)', `- **Checkpoint:** \`${checkpoint}\``, '- `learning_rate`: 0.05', 'Metrics at step 2:', '| train_mean_nll | 1.75 |']) {
      expect(card).toContain(line);
    }
    // where the run's files are and how it reached its backend stay out of the card
    expect(card).not.toContain('log_path');
    expect(card).not.toContain('base_url');
    expect(card).not.toContain('time/total');
  });

  it('--publish without HF_TOKEN, a bad repo id or a flag out of place: one line, exit 2, nothing downloaded or written', async () => {
    const before = readdirSync(work).sort();
    const r = await cookbookAsync('export', checkpoint, '--format', 'peft', '--out', join(work, 'never'), '--publish', 'me/x');
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual(['error: export: --publish needs HF_TOKEN set to a Hugging Face token with write access (nothing was exported or uploaded; --dry-run lists what would be sent without one)']);
    const cases: Array<[Partial<ExportOptions>, string]> = [
      [{ format: 'peft', publish: 'me/x/y', dryRun: true }, 'export: --publish me/x/y is not a Hugging Face repo id'],
      [{ format: 'peft', dryRun: true }, 'export: --dry-run goes with --publish REPO'],
      [{ format: 'peft', public: true }, 'export: --public and --commit-message go with --publish REPO'],
      [{ format: 'merged', strategy: 'fast' }, 'export: --strategy fast is not supported; use one of: auto, shard, full'],
      [{ format: 'merged', dtype: 'int4' }, 'export: --dtype int4 is not supported; use one of: auto, float32, bfloat16, float16'],
      [{ format: 'peft', servingFormat: 'vllm' }, 'export: --dequantize, --quantize and --serving-format apply to merged exports (--format merged)'],
    ];
    for (const [flags, message] of cases) {
      await expect(exportCheckpoint({ checkpoint, out: join(work, 'never'), baseUrl: engine.baseUrl, env: {}, ...flags })).rejects.toThrow(message);
    }
    expect(readdirSync(work).sort()).toEqual(before);
  });

  it('errors name the checkpoint, the directory or the option, and write nothing', async () => {
    const run = checkpoint.split('/')[2];
    const missing = `tinker://${run}/sampler_weights/no-such-checkpoint`;
    const taken = join(work, 'taken');
    mkdirSync(taken);
    writeFileSync(join(taken, 'keep.txt'), 'mine');
    const before = readdirSync(work).sort();

    let r = cookbook('export', missing, '--format', 'peft', '--out', join(work, 'x'));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`error: export: checkpoint ${missing} not found on ${engine.baseUrl}`);

    r = cookbook('export', checkpoint, '--format', 'peft', '--out', taken);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`error: export: --out ${taken} is a non-empty directory; give a new or empty directory`);

    r = cookbook('export', checkpoint, '--format', 'gguf', '--out', join(work, 'y'));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('error: export: --format gguf is not supported; use one of: peft, merged');

    await expect(exportCheckpoint({ checkpoint: 'tinker://nope', format: 'peft', out: join(work, 'z'), baseUrl: engine.baseUrl })).rejects.toThrow(
      'export: tinker://nope is not a checkpoint path; expected tinker://<run>/<weights|sampler_weights|external_weights>/<name>',
    );
    await expect(exportCheckpoint({ checkpoint: join(work, 'no-dir'), format: 'peft', out: join(work, 'z'), baseUrl: engine.baseUrl })).rejects.toThrow(
      `export: checkpoint ${join(work, 'no-dir')} is neither a tinker:// path nor an adapter folder`,
    );
    // a folder that is not a checkpoint: the converter names what is missing
    await expect(exportCheckpoint({ checkpoint: taken, format: 'peft', out: join(work, 'z'), baseUrl: engine.baseUrl })).rejects.toThrow(
      `export: folder ${taken} holds no adapter_config.json (not a LoRA checkpoint)`,
    );
    expect(readdirSync(work).sort()).toEqual(before);
    expect(readdirSync(taken)).toEqual(['keep.txt']);
  });
});
