// Client options, their environment fallbacks, and the server-negotiated settings (§1.1, §1.2,
// §3.1). Everything time-related is an option so tests can shrink the SDK's minute-scale budgets.
import { BackendError, type BackendErrorKind } from './types.js';
import type { ClientConfigResponse } from './schemas.js';

export const DEFAULT_BASE_URL = 'https://tinker.thinkingmachines.dev/services/tinker-prod';
/** The protocol level this client implements; sent as sdk_version so servers pick 0.25 flags. */
export const SDK_VERSION = '0.25.0';

export interface RetryPolicy {
  /** Max HTTP attempts after the first for one logical call (default: unlimited within budgetMs). */
  maxRetries: number;
  /** Total time one logical call may spend retrying transient failures (SDK outer helper: 5 min). */
  budgetMs: number;
  /** Backoff min(baseDelayMs·2^n, maxDelayMs) × (1 − 0.25·U) (SDK HTTP layer: 0.5 s, 10 s). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Cap of the 429 / connection-error backoff while polling futures (SDK: 30 s). */
  pollMaxDelayMs: number;
  /** Longest Retry-After honoured (SDK: 60 s); larger values fall back to the computed backoff. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxRetries: Number.POSITIVE_INFINITY,
  budgetMs: 5 * 60_000,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
  pollMaxDelayMs: 30_000,
  maxRetryAfterMs: 60_000,
};

export type Encoding = 'protobuf' | 'json';

export interface Logger {
  warn(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

export interface TinkerBackendOptions {
  /** Default: $TINKER_BASE_URL, else the hosted service. */
  baseUrl?: string;
  /** Default: $TINKER_API_KEY. Must start with `tml-` (or be a JWT), like the SDK requires. */
  apiKey?: string;
  /**
   * Dialect for forward/forward_backward bodies and results. Default: $TINKER_WIRE (`json` or
   * `proto`), else protobuf with a fallback to JSON when the server refuses its first protobuf body
   * (docs/tinker-client.md). A set dialect (option or env) is used as is, without fallback.
   */
  encoding?: Encoding;
  /** Per-HTTP-request timeout (default 60 s; SDK read timeout). */
  requestTimeoutMs?: number;
  /** Per retrieve_future request timeout (default 45 s; servers long-poll up to ~30 s). */
  pollTimeoutMs?: number;
  /** Optional overall deadline for one future's result (default: none, like the SDK). */
  futureTimeoutMs?: number;
  /** Session heartbeat period (default 10 s). */
  heartbeatIntervalMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Lower (never raise) the server's chunk limits, e.g. to exercise chunking in tests. */
  maxChunkLen?: number;
  maxChunkBytes?: number;
  /** create_session metadata. Default tags: $TINKER_TAGS (comma list). */
  tags?: string[];
  userMetadata?: Record<string, unknown>;
  projectId?: string;
  logger?: Logger;
  /**
   * Called before each backoff of a retried call or poll (the backend unreachable, 5xx, 429, …),
   * so that the caller can show why it waits (the worker heartbeats it into the running activity).
   */
  onRetry?: (info: RetryInfo) => void;
  /**
   * Called when a future's result arrives (or its polling fails): how long the caller waited on
   * the server, so that the caller can account for it (the worker records it as a timing span).
   */
  onFutureWait?: (info: FutureWaitInfo) => void;
  /** Environment to read defaults from (default process.env); injectable for tests. */
  env?: Record<string, string | undefined>;
}

export interface RetryInfo {
  requestType: string;
  /** The failure being retried, e.g. `connection error (ECONNREFUSED)` or `HTTP 503: …`. */
  reason: string;
  /** The failure's kind: `transport` and `timeout` when the server is not reachable at all. */
  kind: BackendErrorKind;
  /** Retries so far of this call (or consecutive failed polls of this future). */
  attempt: number;
  delayMs: number;
  /** How long this call has been failing. */
  failingForMs: number;
}

export interface FutureWaitInfo {
  requestType: string;
  /** When polling began and ended, in milliseconds since the epoch. */
  startMs: number;
  endMs: number;
  /** retrieve_future calls it took (long polls that timed out, re-polls after errors, the answer). */
  polls: number;
}

export interface ResolvedOptions {
  baseUrl: string;
  apiKey: string;
  encoding: Encoding;
  encodingExplicit: boolean;
  requestTimeoutMs: number;
  pollTimeoutMs: number;
  futureTimeoutMs: number | undefined;
  heartbeatIntervalMs: number;
  retry: RetryPolicy;
  maxChunkLen: number | undefined;
  maxChunkBytes: number | undefined;
  tags: string[];
  userMetadata: Record<string, unknown>;
  projectId: string | undefined;
  logger: Logger;
  onRetry: ((info: RetryInfo) => void) | undefined;
  onFutureWait: ((info: FutureWaitInfo) => void) | undefined;
}

const silentLogger: Logger = { warn() {} };

/** The wire names users write (`TINKER_WIRE`, `--wire`, a config's `wire`) and the dialect each means. */
export const WIRE_NAMES = { json: 'json', proto: 'protobuf' } as const satisfies Record<string, Encoding>;
export type WireName = keyof typeof WIRE_NAMES;

/** `json` | `proto` (also `protobuf`) → the dialect; blank → undefined; anything else → a clear error. */
export function parseWire(value: string | undefined, source: string): Encoding | undefined {
  const v = value?.trim().toLowerCase();
  if (!v) return undefined;
  if (v === 'protobuf') return 'protobuf';
  if (v in WIRE_NAMES) return WIRE_NAMES[v as WireName];
  throw new BackendError(`${source} must be json or proto, got ${JSON.stringify(value)}`, undefined, 'config', value, 'bad_request');
}

export function resolveOptions(opts: TinkerBackendOptions = {}): ResolvedOptions {
  const env = opts.env ?? process.env;
  const baseUrl = (opts.baseUrl || env.TINKER_BASE_URL || DEFAULT_BASE_URL).trim();
  try {
    new URL(baseUrl);
  } catch {
    throw new BackendError(`invalid Tinker base URL ${JSON.stringify(baseUrl)}`, undefined, 'config', baseUrl, 'bad_request');
  }
  const apiKey = opts.apiKey ?? env.TINKER_API_KEY ?? '';
  // Same rule as the SDK (lib/_auth_token_provider.py): fail fast instead of 401s later.
  if (!apiKey.startsWith('tml-') && !apiKey.startsWith('eyJ')) {
    throw new BackendError(
      'a Tinker API key starting with "tml-" is required (option apiKey or TINKER_API_KEY)',
      undefined,
      'config',
      undefined,
      'auth',
    );
  }
  const encoding = opts.encoding ?? parseWire(env.TINKER_WIRE, 'TINKER_WIRE');
  const tags = opts.tags ?? (env.TINKER_TAGS ? env.TINKER_TAGS.split(',').map((t) => t.trim()).filter(Boolean) : []);
  return {
    baseUrl,
    apiKey,
    encoding: encoding ?? 'protobuf',
    encodingExplicit: encoding !== undefined,
    requestTimeoutMs: opts.requestTimeoutMs ?? 60_000,
    pollTimeoutMs: opts.pollTimeoutMs ?? 45_000,
    futureTimeoutMs: opts.futureTimeoutMs,
    heartbeatIntervalMs: opts.heartbeatIntervalMs ?? 10_000,
    retry: { ...DEFAULT_RETRY, ...opts.retry },
    maxChunkLen: opts.maxChunkLen,
    maxChunkBytes: opts.maxChunkBytes,
    tags,
    userMetadata: opts.userMetadata ?? {},
    projectId: opts.projectId ?? env.TINKER_PROJECT_ID ?? undefined,
    logger: opts.logger ?? silentLogger,
    onRetry: opts.onRetry,
    onFutureWait: opts.onFutureWait,
  };
}

/** What the client actually uses from client/config, with the SDK's defaults filled in. */
export interface ServerSettings {
  jwtAuth: boolean;
  parallelChunks: boolean;
  compressFwdbwd: boolean;
  maxChunkLen: number;
  maxChunkBytes: number;
  encoding: Encoding;
}

/**
 * `config` undefined means the server has no client/config endpoint (a 0.3–0.16 JSON-era server):
 * such servers only speak JSON and expect chunks in order.
 */
export function negotiateSettings(opts: ResolvedOptions, config: ClientConfigResponse | undefined): ServerSettings {
  const lower = (server: number, mine: number | undefined) => (mine !== undefined ? Math.min(server, mine) : server);
  let encoding: Encoding = opts.encoding;
  // Only an explicit "no protobuf" from the server (or its refusal of a protobuf body, remembered
  // for this process) overrides the default; an explicit option wins.
  const refused = refusedProtobuf.has(serverKey(opts.baseUrl));
  if (!opts.encodingExplicit && (config === undefined || config.proto_write_fwdbwd === false || refused)) encoding = 'json';
  return {
    jwtAuth: config?.pjwt_auth_enabled ?? false,
    parallelChunks: config === undefined ? false : (config.parallel_fwdbwd_chunks ?? true),
    compressFwdbwd: config?.proto_compress_fwdbwd ?? false,
    maxChunkLen: Math.max(1, lower(config?.fwdbwd_max_chunk_len ?? 1024, opts.maxChunkLen)),
    maxChunkBytes: Math.max(1, lower(config?.fwdbwd_max_chunk_bytes_count ?? 5_000_000, opts.maxChunkBytes)),
    encoding,
  };
}

/**
 * Servers that refused a protobuf body this process sent them (core.ts): every later client of
 * the same server starts in JSON instead of paying the refusal again.
 */
const refusedProtobuf = new Set<string>();

function serverKey(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

export function rememberProtobufRefused(baseUrl: string): void {
  refusedProtobuf.add(serverKey(baseUrl));
}

/** The JSON resend was refused too: the body's content was at fault, not its encoding. */
export function forgetProtobufRefused(baseUrl: string): void {
  refusedProtobuf.delete(serverKey(baseUrl));
}

/** Tests: forget what this process learnt about servers' dialects. */
export function forgetServerDialects(): void {
  refusedProtobuf.clear();
}
