// What `cookbook serve` and `cookbook chat` sample from: one model (a `tinker://…/sampler_weights/…`
// checkpoint or a base model name) behind the project's Tinker client, with its tokenizer and
// renderer. Requests share one sampling session and sample concurrently, so a backend that batches
// concurrent requests (the engine with --continuous-batching, hosted Tinker) batches them.
import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { apiKeyFor } from '../backends/api-key.js';
import { createTinkerBackend, type TinkerBackend } from '../backends/tinker-backend.js';
import { BackendError, servedEntry, type ModelInput, type SampleOpts, type SampleResponse, type SamplingParams, type SamplingSession } from '../backends/types.js';
import { rendererForModel } from '../cookbook/renderers/for-model.js';
import type { Renderer } from '../cookbook/renderers/types.js';
import type { Tokenizer } from '../cookbook/tokenizer.js';
import { findRecordedCheckpoint, type RecordedCheckpoint } from './recorded-checkpoint.js';

export interface ServedModelOptions {
  /** A `tinker://…` sampler path or a base model name the backend serves. */
  source: string;
  /** The Tinker API's base URL (the local engine, hosted Tinker, or any compatible server). */
  baseUrl: string;
  /** Tinker API key; default TINKER_API_KEY, or a placeholder for a server on this host. */
  tinkerApiKey?: string;
  /** Override the model's recommended renderer. */
  rendererName?: string;
  /** A folder holding the model's tokenizer.json, for models whose tokenizer is not shipped. */
  tokenizerPath?: string;
  /**
   * Run folders to find a checkpoint's record in when the server's weights_info refuses its path
   * (default: the runs under ./runs); see recorded-checkpoint.ts.
   */
  runDirs?: string[];
}

export interface ServedModel {
  /** The id clients send as `model` (the checkpoint path or base model name). */
  readonly id: string;
  readonly baseModel: string;
  readonly baseUrl: string;
  readonly renderer: Renderer;
  readonly tokenizer: Tokenizer;
  /** The backend's context window for the base model, when it says. */
  readonly maxContextLength: number | undefined;
  sample(prompt: ModelInput, n: number, params: SamplingParams, opts?: SampleOpts): Promise<SampleResponse>;
  close(): Promise<void>;
}

/**
 * One quick request before anything else: the client retries an unreachable server for minutes,
 * which suits a running server riding out a backend restart, not a command given a wrong URL.
 */
async function probeBackend(baseUrl: string, apiKey: string | undefined): Promise<void> {
  let res: Response;
  try {
    res = await fetch(new URL('api/v1/get_server_capabilities', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`), {
      headers: { 'X-API-Key': apiKey ?? '' },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throw new Error(`cannot reach the Tinker backend at ${baseUrl} (${(err as Error).message}); start one with \`npx cookbook dev\` or set --engine-url / TINKER_BASE_URL`);
  }
  if (res.status === 401 || res.status === 403) throw new Error(`the Tinker backend at ${baseUrl} rejected the API key (HTTP ${res.status}); check TINKER_API_KEY`);
}

export async function openServedModel(o: ServedModelOptions): Promise<ServedModel> {
  const apiKey = apiKeyFor(o.baseUrl, o.tinkerApiKey);
  await probeBackend(o.baseUrl, apiKey);
  const backend = createTinkerBackend({ baseUrl: o.baseUrl, apiKey });
  try {
    const isPath = o.source.startsWith('tinker://');
    // A checkpoint names its base model on the server (weights_info), or in the run that saved it.
    const recorded = isPath ? await baseModelOfCheckpoint(backend, o.source, o.runDirs) : undefined;
    const baseModel = recorded?.baseModel ?? o.source;
    const caps = await backend.capabilities();
    const served = servedEntry(caps, baseModel);
    // A base model given as a local folder (SkyRL-tx, TuFT, hatchery load one) need not be listed, as `train` allows.
    const isLocalFolder = isAbsolute(baseModel) && existsSync(baseModel);
    if (!isPath && !served && !isLocalFolder) {
      throw new Error(`the backend at ${backend.baseUrl} does not serve ${baseModel} (it serves: ${caps.supported_models.map((m) => m.model_name).join(', ') || 'nothing'})`);
    }
    const { renderer, tokenizer } = await rendererForModel({
      model_name: baseModel,
      renderer_name: o.rendererName ?? recorded?.rendererName ?? null,
      tokenizer_path: o.tokenizerPath ?? recorded?.tokenizerPath ?? null,
    });
    const model = new BackendServedModel(backend, o.source, baseModel, renderer, tokenizer, served?.max_context_length);
    await model.session(); // fail at start, not on the first request, when the weights cannot be loaded
    return model;
  } catch (err) {
    await backend.close();
    throw err;
  }
}

/**
 * The checkpoint's base model from weights_info; where the server refuses the path (4xx: SkyRL-tx
 * answers 400 to the `tinker://<model>/<name>` sampler paths it invents), from the local run that
 * recorded it, with that run's renderer and tokenizer.
 */
async function baseModelOfCheckpoint(backend: TinkerBackend, path: string, runDirs: string[] | undefined): Promise<Partial<RecordedCheckpoint> & { baseModel: string }> {
  try {
    return { baseModel: (await backend.weightsInfo(path)).base_model };
  } catch (err) {
    if (!(err instanceof BackendError && (err.kind === 'bad_request' || err.kind === 'not_found'))) throw err;
    const recorded = findRecordedCheckpoint(path, runDirs);
    if (recorded) return recorded;
    const where = runDirs?.length ? runDirs.join(', ') : 'the runs under ./runs';
    throw new Error(`the server's weights_info refused ${path} (${err.message}), and no run in ${where} records it: pass --run <the folder of the run that saved it>`);
  }
}

class BackendServedModel implements ServedModel {
  private current: Promise<SamplingSession> | undefined;

  constructor(
    private readonly backend: TinkerBackend,
    readonly id: string,
    readonly baseModel: string,
    readonly renderer: Renderer,
    readonly tokenizer: Tokenizer,
    readonly maxContextLength: number | undefined,
  ) {}

  get baseUrl(): string {
    return this.backend.baseUrl;
  }

  session(): Promise<SamplingSession> {
    if (!this.current) {
      const opened = this.backend.createSamplingSession(this.id.startsWith('tinker://') ? { modelPath: this.id } : { baseModel: this.id });
      this.current = opened;
      opened.catch(() => {
        if (this.current === opened) this.current = undefined;
      });
    }
    return this.current;
  }

  async sample(prompt: ModelInput, n: number, params: SamplingParams, opts: SampleOpts = {}): Promise<SampleResponse> {
    const session = this.session();
    try {
      return await (await session).sample(prompt, n, params, opts);
    } catch (err) {
      // A restarted server knows no old session: open a new one once and try again.
      if (!(err instanceof BackendError && err.kind === 'not_found')) throw err;
      if (this.current === session) this.current = undefined;
      return (await this.session()).sample(prompt, n, params, opts);
    }
  }

  close(): Promise<void> {
    return this.backend.close();
  }
}
