// `cookbook export <checkpoint> --format peft|merged --out DIR [--publish REPO [--dry-run]]`: weights
// out of a Tinker backend, as a serving adapter (vLLM / SGLang's PEFT folder) or a merged checkpoint
// with config, tokenizer, generation config and a model card, optionally uploaded to the Hub.
//
// The checkpoint's files come through the protocol: `weights_info` names the base model, then
// `GET /api/v1/training_runs/{run}/checkpoints/{kind}/{name}/archive` (200 `{url, expires}` or a
// 302 to a signed URL; 503 = still being prepared) gives the tar of the checkpoint, and for
// `external_weights/` checkpoints (SDK 0.38) `…/external_weights_urls` gives one signed URL per
// file. A local folder holding adapter_config.json + adapter_model.safetensors works as well.
// The conversion runs in the engine's Python environment (engine/tinker_engine/export.py): peft
// and transformers write exactly the layouts their loaders read, and a merged export needs the
// engine's base model, built there the way the engine builds it.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ConfigError } from '../cookbook/config/overrides.js';
import { apiKeyFor } from '../workers/worker.js';
import { ENGINE_DIR, engineProcessEnv, ensureEngineEnv } from '../stack/engine-env.mjs';
import { DEFAULT_ENGINE_URL } from './connect.js';
import { cardFacts } from './export-card.js';

export const EXPORT_FORMATS = ['peft', 'merged'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const EXPORT_STRATEGIES = ['auto', 'shard', 'full'] as const;
export const EXPORT_DTYPES = ['auto', 'float32', 'bfloat16', 'float16'] as const;
// The Hub's repo ids: name or namespace/name; letters, digits, '-', '_', '.'.
const REPO_ID = /^(?:[A-Za-z0-9][A-Za-z0-9._-]*\/)?[A-Za-z0-9][A-Za-z0-9._-]*$/;

export const EXPORT_USAGE = `  export <checkpoint> --format peft|merged --out DIR
        [--base-dir DIR] [--base-model-id NAME]   a serving adapter (PEFT folder vLLM / SGLang load) or a merged
        [--dtype auto|float32|bfloat16|float16]   Hugging Face checkpoint (+ tokenizer, generation config, model
        [--strategy auto|shard|full]              card) of a tinker://… checkpoint or a local adapter folder;
        [--dequantize] [--quantize experts-fp8 --serving-format vllm]   merged onto a base folder per family
        [--run DIR]                               the run whose settings, data and metrics fill the model card
        [--publish REPO [--public] [--commit-message M] [--dry-run]]   upload with HF_TOKEN; see docs/export.md`;

export interface ExportOptions {
  /** tinker://<run>/<weights|sampler_weights|external_weights>/<name>, or a local adapter folder. */
  checkpoint: string;
  format?: string;
  out?: string;
  /** The Tinker server that holds the checkpoint (the local engine by default). */
  baseUrl: string;
  apiKey?: string;
  /** Local Hugging Face folder of the base model, for bases the engine does not build. */
  baseDir?: string;
  /** base_model_name_or_path written into the export (default: the base model's name or folder). */
  baseModelId?: string;
  dtype?: string;
  /** How a merge onto a base folder runs: auto (shard when the base is large), shard, full. */
  strategy?: string;
  /** Merged: a quantized base's weights written dequantized. */
  dequantize?: boolean;
  /** Merged: quantize the routed experts (experts-fp8), with servingFormat's metadata (vllm). */
  quantize?: string;
  servingFormat?: string;
  /** Run folders to find the checkpoint's run in (default: the runs under ./runs), for the model card. */
  runDirs?: string[];
  /** Upload the export to this Hugging Face repo (HF_TOKEN); dryRun: list what would be sent instead. */
  publish?: string;
  dryRun?: boolean;
  public?: boolean;
  commitMessage?: string;
  /** Where HF_TOKEN is read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Archive still being prepared (503): tries and pause between them. */
  archiveRetries?: number;
  archiveRetryDelayMs?: number;
}

export interface UploadPlan {
  repo_id: string;
  private: boolean;
  commit_message: string;
  folder: string;
  files: Array<{ path: string; bytes: number }>;
  total_bytes: number;
  url: string;
  dry_run: boolean;
}

export interface ExportResult {
  out: string;
  files: string[];
  baseModel: string | null;
  /** What was (or, in a dry run, would be) uploaded. */
  publish?: UploadPlan;
  /** The run folder whose records filled the model card, when one lists the checkpoint. */
  run?: string;
}

const TINKER_PATH = /^tinker:\/\/([^/]+)\/(weights|sampler_weights|external_weights)\/([^/]+)$/;

function checkOut(out: string): void {
  if (!existsSync(out)) return;
  if (!statSync(out).isDirectory()) throw new ConfigError(`export: --out ${out} is a file; give a new or empty directory`);
  if (readdirSync(out).length > 0) throw new ConfigError(`export: --out ${out} is a non-empty directory; give a new or empty directory`);
}

export function checkExportOptions(o: ExportOptions): { format: ExportFormat; out: string } {
  if (!o.checkpoint) throw new ConfigError('export: give a checkpoint (tinker://<run>/sampler_weights/<name> or an adapter folder)');
  if (!o.format) throw new ConfigError(`export: --format is required (${EXPORT_FORMATS.join(' or ')})`);
  if (!(EXPORT_FORMATS as readonly string[]).includes(o.format)) {
    throw new ConfigError(`export: --format ${o.format} is not supported; use one of: ${EXPORT_FORMATS.join(', ')}`);
  }
  if (!o.out) throw new ConfigError('export: --out DIR is required (a new or empty directory)');
  const out = resolve(o.out);
  checkOut(out);
  if (o.baseDir && !(existsSync(o.baseDir) && statSync(o.baseDir).isDirectory())) {
    throw new ConfigError(`export: --base-dir ${o.baseDir}: no such directory`);
  }
  oneOf('--dtype', o.dtype, EXPORT_DTYPES);
  oneOf('--strategy', o.strategy, EXPORT_STRATEGIES);
  if (o.format === 'peft' && (o.dequantize || o.quantize || o.servingFormat)) {
    throw new ConfigError('export: --dequantize, --quantize and --serving-format apply to merged exports (--format merged)');
  }
  if (o.dryRun && !o.publish) throw new ConfigError('export: --dry-run goes with --publish REPO (it lists what the upload would send)');
  if ((o.public || o.commitMessage) && !o.publish) throw new ConfigError('export: --public and --commit-message go with --publish REPO');
  if (o.publish !== undefined) {
    if (o.publish.length > 96 || !REPO_ID.test(o.publish) || o.publish.includes('..') || o.publish.includes('--')) {
      throw new ConfigError(`export: --publish ${o.publish} is not a Hugging Face repo id (namespace/name: letters, digits, '-', '_', '.')`);
    }
    // Before any download or merge: an upload that cannot happen should not cost an export first.
    if (!o.dryRun && !(o.env ?? process.env).HF_TOKEN) {
      throw new ConfigError('export: --publish needs HF_TOKEN set to a Hugging Face token with write access (nothing was exported or uploaded; --dry-run lists what would be sent without one)');
    }
  }
  return { format: o.format as ExportFormat, out };
}

function oneOf(flag: string, value: string | undefined, choices: readonly string[]): void {
  if (value !== undefined && !choices.includes(value)) throw new ConfigError(`export: ${flag} ${value} is not supported; use one of: ${choices.join(', ')}`);
}

export async function exportCheckpoint(o: ExportOptions): Promise<ExportResult> {
  const { format, out } = checkExportOptions(o);
  const work = mkdtempSync(join(tmpdir(), 'cookbook-export-'));
  try {
    let source: string[];
    let baseModel: string | null = null;
    const m = TINKER_PATH.exec(o.checkpoint);
    if (m) {
      const server = new CheckpointServer(o.baseUrl, o.apiKey ?? apiKeyFor(o.baseUrl));
      baseModel = (await server.weightsInfo(o.checkpoint)).base_model;
      const [, run, kind, name] = m;
      if (kind === 'external_weights') {
        const dir = join(work, 'checkpoint');
        await server.downloadExternal(o.checkpoint, run, name, dir);
        source = ['--adapter-dir', dir];
      } else {
        const tar = join(work, 'checkpoint.tar');
        await server.downloadArchive(o.checkpoint, run, kind, name, tar, o.archiveRetries ?? 12, o.archiveRetryDelayMs ?? 5_000);
        source = ['--archive', tar];
      }
    } else if (o.checkpoint.startsWith('tinker://')) {
      throw new ConfigError(`export: ${o.checkpoint} is not a checkpoint path; expected tinker://<run>/<weights|sampler_weights|external_weights>/<name>`);
    } else if (existsSync(o.checkpoint) && statSync(o.checkpoint).isDirectory()) {
      source = ['--adapter-dir', resolve(o.checkpoint)];
    } else {
      throw new ConfigError(`export: checkpoint ${o.checkpoint} is neither a tinker:// path nor an adapter folder`);
    }
    const args = [...source, '--format', format, '--out', out];
    if (baseModel) args.push('--base-model', baseModel);
    if (o.baseDir) args.push('--base-dir', resolve(o.baseDir));
    if (o.baseModelId) args.push('--base-model-id', o.baseModelId);
    if (o.dtype) args.push('--dtype', o.dtype);
    if (o.strategy) args.push('--strategy', o.strategy);
    if (o.dequantize) args.push('--dequantize');
    if (o.quantize) args.push('--quantize', o.quantize);
    if (o.servingFormat) args.push('--serving-format', o.servingFormat);
    const facts = cardFacts(o.checkpoint, o.runDirs);
    const card = join(work, 'card.json');
    writeFileSync(card, JSON.stringify(facts));
    args.push('--card', card);
    if (o.publish) {
      args.push('--publish', o.publish);
      if (o.dryRun) args.push('--dry-run');
      if (o.public) args.push('--public');
      if (o.commitMessage) args.push('--commit-message', o.commitMessage);
    }
    // Only an upload goes online; HF_TOKEN reaches the converter only then.
    const uploading = Boolean(o.publish && !o.dryRun);
    const env = uploading ? { HF_TOKEN: (o.env ?? process.env).HF_TOKEN } : { HF_HUB_OFFLINE: '1' };
    const result = await runConverter(args, env);
    return { ...result, baseModel, ...(facts.run ? { run: facts.run.log_path } : {}) };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The protocol calls that get a checkpoint's files out of a Tinker server. */
class CheckpointServer {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string | undefined,
  ) {}

  private url(path: string): URL {
    return new URL(path.replace(/^\//, ''), this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
  }

  private async call(what: string, path: string, init: RequestInit = {}): Promise<Response> {
    try {
      return await fetch(this.url(path), {
        ...init,
        headers: { 'X-API-Key': this.apiKey ?? '', Accept: 'application/json', ...(init.headers as Record<string, string>) },
        signal: AbortSignal.timeout(120_000),
      });
    } catch (err) {
      throw new Error(`export: cannot reach the Tinker server at ${this.baseUrl} for ${what} (${(err as Error).message}); start it with \`npx cookbook dev\` or set --engine-url / TINKER_BASE_URL`);
    }
  }

  private async failure(what: string, checkpoint: string, res: Response): Promise<Error> {
    const text = await res.text().catch(() => '');
    let detail = text.slice(0, 500);
    try {
      const body = JSON.parse(text) as { detail?: unknown };
      if (typeof body.detail === 'string') detail = body.detail;
    } catch {
      /* not JSON: the text itself */
    }
    if (res.status === 404) return new ConfigError(`export: checkpoint ${checkpoint} not found on ${this.baseUrl} (${detail || 'HTTP 404'})`);
    if (res.status === 401 || res.status === 403) return new Error(`export: ${this.baseUrl} refused ${what} (HTTP ${res.status}: ${detail}); check TINKER_API_KEY`);
    if (res.status === 400) return new ConfigError(`export: ${what} of ${checkpoint}: ${detail}`);
    return new Error(`export: ${what} of ${checkpoint} failed on ${this.baseUrl}: HTTP ${res.status} ${detail}`);
  }

  async weightsInfo(checkpoint: string): Promise<{ base_model: string; lora_rank?: number | null }> {
    const res = await this.call('weights_info', '/api/v1/weights_info', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ tinker_path: checkpoint, type: 'weights_info' }),
    });
    if (!res.ok) throw await this.failure('weights_info', checkpoint, res);
    const body = (await res.json()) as { base_model?: unknown; lora_rank?: number | null };
    if (typeof body.base_model !== 'string') throw new Error(`export: weights_info of ${checkpoint} has no base_model`);
    return { base_model: body.base_model, lora_rank: body.lora_rank };
  }

  /** The archive route: 200 `{url, expires}` or a redirect to the signed URL; 503 while it is prepared. */
  async downloadArchive(checkpoint: string, run: string, kind: string, name: string, file: string, retries: number, delayMs: number): Promise<void> {
    const route = `/api/v1/training_runs/${encodeURIComponent(run)}/checkpoints/${kind}/${encodeURIComponent(name)}/archive`;
    for (let attempt = 1; ; attempt++) {
      const res = await this.call('the checkpoint archive', route, { redirect: 'manual' });
      let url: string | null = null;
      if (res.status >= 300 && res.status < 400) {
        url = res.headers.get('location');
        await res.body?.cancel();
        if (!url) throw new Error(`export: the archive route of ${checkpoint} answered HTTP ${res.status} without a Location`);
      } else if (res.ok) {
        const body = (await res.json()) as { url?: unknown };
        if (typeof body.url !== 'string') throw new Error(`export: the archive route of ${checkpoint} answered without a url`);
        url = body.url;
      } else if (res.status === 503 && attempt < retries) {
        await res.body?.cancel();
        await new Promise((r) => setTimeout(r, delayMs));
        continue;
      } else if (res.status === 404 || res.status === 405) {
        const err = await this.failure('the checkpoint archive', checkpoint, res);
        // weights_info found the checkpoint: a 404 here is a server without archive downloads.
        throw new Error(`export: ${this.baseUrl} offers no archive download for ${checkpoint} (${err.message.replace(/^export: /, '')}); download the checkpoint folder yourself and pass its path`);
      } else {
        throw await this.failure('the checkpoint archive', checkpoint, res);
      }
      await download(new URL(url, this.url(route)).toString(), file, checkpoint);
      return;
    }
  }

  /** SDK 0.38's external weights: one signed URL per file of the checkpoint. */
  async downloadExternal(checkpoint: string, run: string, name: string, dir: string): Promise<void> {
    const route = `/api/v1/training_runs/${encodeURIComponent(run)}/checkpoints/external_weights/${encodeURIComponent(name)}/external_weights_urls`;
    const res = await this.call('external_weights_urls', route);
    if (!res.ok) throw await this.failure('external_weights_urls', checkpoint, res);
    const body = (await res.json()) as { urls?: Record<string, string> };
    const urls = Object.entries(body.urls ?? {});
    if (urls.length === 0) throw new Error(`export: external_weights_urls of ${checkpoint} lists no files`);
    for (const [rel, url] of urls) {
      const target = resolve(dir, rel);
      if (!target.startsWith(resolve(dir) + sep)) throw new Error(`export: external_weights_urls of ${checkpoint} names a file outside the checkpoint: ${rel}`);
      if (rel.endsWith('.age')) throw new ConfigError(`export: ${checkpoint} is age-encrypted (${rel}); decrypt it and pass the folder instead`);
      mkdirSync(dirname(target), { recursive: true });
      await download(url, target, checkpoint);
    }
  }
}

/** A signed URL: fetched without the API key (it is its own credential, and may be another host). */
async function download(url: string, file: string, checkpoint: string): Promise<void> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(30 * 60_000) });
  } catch (err) {
    throw new Error(`export: downloading ${checkpoint} from ${new URL(url).origin} failed: ${(err as Error).message}`);
  }
  if (!res.ok || !res.body) {
    const text = await res.text().catch(() => '');
    throw new Error(`export: downloading ${checkpoint} failed: HTTP ${res.status} ${text.slice(0, 300)}`);
  }
  await pipeline(Readable.fromWeb(res.body as unknown as WebReadableStream<Uint8Array>), createWriteStream(file));
}

/** engine/tinker_engine/export.py in the engine's venv; exit status 2 = bad input (one line on stderr). */
async function runConverter(args: string[], env: Record<string, string | undefined>): Promise<{ out: string; files: string[]; publish?: UploadPlan }> {
  const { python } = await ensureEngineEnv();
  return new Promise((resolvePromise, reject) => {
    const base = engineProcessEnv({ TRANSFORMERS_VERBOSITY: 'error', ...env });
    if (!('HF_HUB_OFFLINE' in env)) delete base.HF_HUB_OFFLINE;
    if (!('HF_TOKEN' in env)) delete base.HF_TOKEN;
    const child = spawn(python, ['-m', 'tinker_engine.export', ...args], {
      cwd: ENGINE_DIR,
      env: base,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (err) => reject(new Error(`export: cannot run the converter (${python}): ${err.message}`)));
    child.on('close', (code) => {
      const lastError = stderr.split('\n').filter((l) => l.startsWith('error: ')).pop();
      if (code === 2 && lastError) return reject(new ConfigError(`export: ${lastError.slice('error: '.length)}`));
      if (code !== 0) return reject(new Error(`export: the converter failed (exit ${code}): ${stderr.trim().split('\n').slice(-8).join('\n')}`));
      try {
        const line = stdout.trim().split('\n').pop() ?? '';
        resolvePromise(JSON.parse(line) as { out: string; files: string[]; publish?: UploadPlan });
      } catch {
        reject(new Error(`export: the converter printed no result: ${stdout.slice(-300)}`));
      }
    });
  });
}

export function formatExport(r: ExportResult, format: ExportFormat): string {
  const what = format === 'peft' ? 'PEFT adapter' : 'merged Hugging Face checkpoint';
  const lines = [`${what} written to ${r.out}`, ...r.files.map((f) => `  ${f}`)];
  if (r.run) lines.push(`model card filled from run ${r.run}`);
  const p = r.publish;
  if (p) {
    const head = `${p.files.length} files, ${p.total_bytes} bytes, to ${p.url} (${p.private ? 'private' : 'public'}), commit message "${p.commit_message}"`;
    lines.push(p.dry_run ? `dry run: nothing sent; the upload would send ${head}:` : `uploaded ${head}:`);
    lines.push(...p.files.map((f) => `  ${String(f.bytes).padStart(12)}  ${f.path}`));
  } else {
    lines.push('load it as shown in docs/export.md');
  }
  return lines.join('\n');
}

const OPTIONS = {
  format: { type: 'string' },
  out: { type: 'string' },
  'engine-url': { type: 'string' },
  'base-dir': { type: 'string' },
  'base-model-id': { type: 'string' },
  dtype: { type: 'string' },
  strategy: { type: 'string' },
  dequantize: { type: 'boolean', default: false },
  quantize: { type: 'string' },
  'serving-format': { type: 'string' },
  run: { type: 'string', multiple: true },
  publish: { type: 'string' },
  public: { type: 'boolean', default: false },
  'commit-message': { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** `cookbook export …`: its own flags, checked before the server is contacted. */
export async function exportCommand(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    throw new ConfigError(`export: ${(err as Error).message}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(EXPORT_USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw new ConfigError('export: usage `cookbook export <checkpoint> --format peft|merged --out DIR`');
  const result = await exportCheckpoint({
    checkpoint: positionals[0],
    format: values.format,
    out: values.out,
    baseUrl: values['engine-url'] ?? process.env.TINKER_BASE_URL ?? DEFAULT_ENGINE_URL,
    baseDir: values['base-dir'],
    baseModelId: values['base-model-id'],
    dtype: values.dtype,
    strategy: values.strategy,
    dequantize: values.dequantize,
    quantize: values.quantize,
    servingFormat: values['serving-format'],
    runDirs: values.run,
    publish: values.publish,
    public: values.public,
    commitMessage: values['commit-message'],
    dryRun: values['dry-run'],
  });
  console.log(formatExport(result, values.format as ExportFormat));
  return 0;
}
