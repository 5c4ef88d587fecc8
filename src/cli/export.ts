// `cookbook export <checkpoint> --format peft|merged --out DIR`: weights out of a Tinker backend.
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
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ConfigError } from '../cookbook/config/overrides.js';
import { apiKeyFor } from '../workers/worker.js';
import { ENGINE_DIR, engineProcessEnv, ensureEngineEnv } from '../stack/engine-env.mjs';

export const EXPORT_FORMATS = ['peft', 'merged'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const EXPORT_USAGE = `  export <checkpoint> --format peft|merged --out DIR
        [--base-dir DIR] [--base-model-id NAME]   a PEFT adapter folder or a merged Hugging Face checkpoint of a
        [--dtype auto|float32|bfloat16|float16]   tinker://… checkpoint (or a local adapter folder); see docs/export.md`;

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
  /** Archive still being prepared (503): tries and pause between them. */
  archiveRetries?: number;
  archiveRetryDelayMs?: number;
}

export interface ExportResult {
  out: string;
  files: string[];
  baseModel: string | null;
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
  return { format: o.format as ExportFormat, out };
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
    const result = await runConverter(args);
    return { ...result, baseModel };
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
async function runConverter(args: string[]): Promise<{ out: string; files: string[] }> {
  const { python } = await ensureEngineEnv();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(python, ['-m', 'tinker_engine.export', ...args], {
      cwd: ENGINE_DIR,
      env: engineProcessEnv({ HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' }),
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
        resolvePromise(JSON.parse(line) as { out: string; files: string[] });
      } catch {
        reject(new Error(`export: the converter printed no result: ${stdout.slice(-300)}`));
      }
    });
  });
}

export function formatExport(r: ExportResult, format: ExportFormat): string {
  const what = format === 'peft' ? 'PEFT adapter' : 'merged Hugging Face checkpoint';
  return [`${what} written to ${r.out}`, ...r.files.map((f) => `  ${f}`), 'load it as shown in docs/export.md'].join('\n');
}
