// State shared by one client instance: transport, negotiated server settings, the server session
// with its heartbeat, and the session-wide counters (§2, §3.1). Training and sampling sessions hold
// a reference to it.
import type { ZodType, z } from 'zod';
import { forgetProtobufRefused, negotiateSettings, rememberProtobufRefused, SDK_VERSION, type ResolvedOptions, type ServerSettings } from './config.js';
import { type FutureRequestType, pollFuture, type ResultDecoder } from './futures.js';
import { ClientClosedError, HttpClient, type HttpRequest, parseJsonBody } from './http.js';
import { AuthTokenResponse, ClientConfigResponse, CreateSessionResponse, UntypedFuture } from './schemas.js';
import { BackendError, type Submitted } from './types.js';

const HEARTBEAT_WARN_AFTER_MS = 120_000; // SDK warns after 120 s without a successful heartbeat
const JWT_REFRESH_MARGIN_MS = 60_000;

export function parseJson<T>(schema: ZodType<T>, value: unknown, requestType: string, status = 200): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new BackendError(
      `Tinker ${requestType} response has an unexpected shape: ${parsed.error.message}`,
      status,
      requestType,
      value,
      'server',
    );
  }
  return parsed.data;
}

/** A Submitted whose result() polls lazily and memoises the promise. */
export function submitted<T>(seqIds: number, poll: () => Promise<T>, requestIds?: string[]): Submitted<T> {
  let p: Promise<T> | undefined;
  return {
    seqIds,
    ...(requestIds ? { requestIds } : {}),
    result() {
      p ??= poll();
      return p;
    },
  };
}

export function checkSeqId(seqId: number, requestType: string): void {
  // seq 0 is the model's create_model (§5.1); servers range-check it.
  if (!Number.isSafeInteger(seqId) || seqId < 1 || seqId > 2 ** 31 - 1) {
    throw new BackendError(`${requestType}: seqId must be an integer in [1, 2^31), got ${seqId}`, undefined, requestType, { seqId }, 'bad_request');
  }
}

function jwtExpiry(jwt: string): number | undefined {
  try {
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: number };
    return typeof payload.exp === 'number' ? payload.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

export class ClientCore {
  readonly http: HttpClient;
  private settingsPromise: Promise<ServerSettings> | undefined;
  private resolvedSettings: ServerSettings | undefined;
  private sessionPromise: Promise<string> | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private lastHeartbeatOk = Date.now();
  private modelSeq = 0;
  private samplingSeq = 0;

  constructor(readonly opts: ResolvedOptions) {
    this.http = new HttpClient(opts);
  }

  get closed(): boolean {
    return this.http.isClosed;
  }

  /** client/config (once; retried on the next call if it failed). */
  settings(): Promise<ServerSettings> {
    this.settingsPromise ??= this.negotiate().catch((err) => {
      this.settingsPromise = undefined;
      throw err;
    });
    return this.settingsPromise;
  }

  /** Settings if already negotiated (sync access for encoding fallbacks). */
  get currentSettings(): ServerSettings | undefined {
    return this.resolvedSettings;
  }

  /**
   * Whether a protobuf body may still be refused and resent as JSON: the dialect was not set (option,
   * TINKER_WIRE), and no protobuf body of this client has been accepted yet (docs/tinker-client.md).
   */
  get protobufOnTrial(): boolean {
    return !this.opts.encodingExplicit && !this.protobufAccepted;
  }

  private protobufAccepted = false;

  /** The server accepted a protobuf body: from now on its failures are ordinary failures. */
  protobufWorks(): void {
    this.protobufAccepted = true;
  }

  /** Switch the dialect after the server refused protobuf; remembered for the server (config.ts). */
  fallBackToJson(why: string): void {
    if (this.resolvedSettings) {
      this.resolvedSettings = { ...this.resolvedSettings, encoding: 'json' };
      this.settingsPromise = Promise.resolve(this.resolvedSettings);
    }
    rememberProtobufRefused(this.opts.baseUrl);
    this.opts.logger.warn({ baseUrl: this.opts.baseUrl, why }, 'Tinker server refused protobuf; using the JSON dialect');
  }

  /**
   * Undoes fallBackToJson when the JSON resend was refused as well: the request itself was bad (a
   * 400 for its data), which says nothing about the server's dialect, so protobuf stays.
   */
  backToProtobuf(): void {
    if (this.resolvedSettings) {
      this.resolvedSettings = { ...this.resolvedSettings, encoding: 'protobuf' };
      this.settingsPromise = Promise.resolve(this.resolvedSettings);
    }
    forgetProtobufRefused(this.opts.baseUrl);
  }

  private async negotiate(): Promise<ServerSettings> {
    let config: ClientConfigResponse | undefined;
    try {
      const res = await this.http.call({
        method: 'POST',
        path: '/api/v1/client/config',
        body: { sdk_version: SDK_VERSION },
        requestType: 'client_config',
      });
      config = parseJson(ClientConfigResponse, parseJsonBody(res), 'client_config');
    } catch (err) {
      // No client/config at all: a JSON-era (0.3–0.16) server, which predates the endpoint.
      if (!(err instanceof BackendError && err.status === 404)) throw err;
    }
    const settings = negotiateSettings(this.opts, config);
    if (settings.jwtAuth) this.installJwtAuth();
    this.resolvedSettings = settings;
    return settings;
  }

  private installJwtAuth(): void {
    let jwt: string | undefined;
    let expiresAt = 0;
    let pending: Promise<string> | undefined;
    const fetchJwt = async () => {
      const res = await this.http.call({
        method: 'POST',
        path: '/api/v1/auth/token',
        body: {},
        headers: { 'X-API-Key': this.opts.apiKey },
        requestType: 'auth_token',
      });
      const token = parseJson(AuthTokenResponse, parseJsonBody(res), 'auth_token').jwt;
      jwt = token;
      expiresAt = jwtExpiry(token) ?? Date.now() + 3_600_000;
      return token;
    };
    this.http.setAuthProvider(async () => {
      if (jwt && expiresAt - Date.now() > JWT_REFRESH_MARGIN_MS) return jwt;
      pending ??= fetchJwt().finally(() => (pending = undefined));
      return pending;
    });
  }

  async callJson<T>(req: HttpRequest, schema: ZodType<T>): Promise<T> {
    await this.settings();
    const res = await this.http.call(req);
    return parseJson(schema, parseJsonBody(res), req.requestType, res.status);
  }

  /** POST a future-returning request (with §6 retries) and return its request id. */
  async submit(req: HttpRequest): Promise<string> {
    return (await this.submitFuture(req)).request_id;
  }

  /** Submits a future-returning request; the whole promise (request id, sample sequence ids). */
  async submitFuture(req: HttpRequest): Promise<z.infer<typeof UntypedFuture>> {
    const res = await this.http.call(req);
    return parseJson(UntypedFuture, parseJsonBody(res), req.requestType, res.status);
  }

  poll<T>(requestId: string, requestType: FutureRequestType, decoder: ResultDecoder<T>): Promise<T> {
    const wantProto = (this.resolvedSettings?.encoding ?? this.opts.encoding) === 'protobuf';
    return pollFuture(this.http, this.opts, { requestId, requestType, decoder, wantProto });
  }

  // ---- session ----

  /** The server session, created lazily (as the SDK does) and kept alive by heartbeats. */
  session(): Promise<string> {
    if (this.closed) return Promise.reject(new ClientClosedError('create_session'));
    this.sessionPromise ??= this.createSession().catch((err) => {
      this.sessionPromise = undefined;
      throw err;
    });
    return this.sessionPromise;
  }

  /** Forget `sessionId` (the server lost it) so the next session() creates a fresh one. */
  async invalidateSession(sessionId: string): Promise<void> {
    if (this.sessionPromise && (await this.sessionPromise.catch(() => undefined)) === sessionId) {
      this.sessionPromise = undefined;
      this.stopHeartbeat();
    }
  }

  /**
   * Runs `fn` with the session id; if the server answers 404 (it forgot the session, e.g. after an
   * engine restart, before a heartbeat noticed), retries once in a fresh session.
   */
  async withSession<T>(fn: (sessionId: string) => Promise<T>): Promise<T> {
    const sid = await this.session();
    try {
      return await fn(sid);
    } catch (err) {
      if (!(err instanceof BackendError && err.kind === 'not_found')) throw err;
      await this.invalidateSession(sid);
      return fn(await this.session());
    }
  }

  /** Current session id if one exists (ephemeral samplers are only valid within it). */
  async existingSession(): Promise<string | undefined> {
    return this.sessionPromise ? this.sessionPromise.catch(() => undefined) : undefined;
  }

  private async createSession(): Promise<string> {
    await this.settings();
    const body: Record<string, unknown> = {
      tags: this.opts.tags,
      user_metadata: this.opts.userMetadata,
      sdk_version: SDK_VERSION,
      type: 'create_session',
    };
    if (this.opts.projectId) body.project_id = this.opts.projectId;
    const res = await this.http.call({ method: 'POST', path: '/api/v1/create_session', body, requestType: 'create_session' });
    const parsed = parseJson(CreateSessionResponse, parseJsonBody(res), 'create_session');
    if (parsed.warning_message) this.opts.logger.warn({ message: parsed.warning_message }, 'Tinker create_session warning');
    if (parsed.error_message) this.opts.logger.warn({ message: parsed.error_message }, 'Tinker create_session error message');
    this.modelSeq = 0;
    this.samplingSeq = 0;
    this.startHeartbeat(parsed.session_id);
    return parsed.session_id;
  }

  private startHeartbeat(sessionId: string): void {
    this.stopHeartbeat();
    this.lastHeartbeatOk = Date.now();
    const timer = setInterval(() => void this.heartbeat(sessionId), this.opts.heartbeatIntervalMs);
    timer.unref(); // a heartbeat must never keep the process alive
    this.heartbeatTimer = timer;
  }

  private stopHeartbeat(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
  }

  /** One heartbeat; no retries (SDK max_retries=0). Failures only warn, except a lost session. */
  private async heartbeat(sessionId: string): Promise<void> {
    if (this.closed) return this.stopHeartbeat();
    try {
      const res = await this.http.send({
        method: 'POST',
        path: '/api/v1/session_heartbeat',
        body: { session_id: sessionId, type: 'session_heartbeat' },
        requestType: 'session_heartbeat',
        timeoutMs: Math.min(10_000, this.opts.heartbeatIntervalMs * 2),
      });
      if (res.status >= 200 && res.status < 300) {
        this.lastHeartbeatOk = Date.now();
        return;
      }
      if (res.status === 404 || res.status === 410) {
        // The server forgot the session (404, e.g. engine restart) or finished it (410, SDK 0.38+):
        // the next model or sampler gets a fresh session instead of failing on a dead one.
        this.opts.logger.warn({ sessionId, status: res.status }, 'Tinker session is gone; a new one will be created on demand');
        await this.invalidateSession(sessionId);
        this.stopHeartbeat();
        return;
      }
    } catch {
      // transport trouble: fall through to the staleness warning
    }
    if (Date.now() - this.lastHeartbeatOk > HEARTBEAT_WARN_AFTER_MS) {
      this.opts.logger.warn({ sessionId, sinceMs: Date.now() - this.lastHeartbeatOk }, 'Tinker heartbeats are failing');
    }
  }

  get heartbeatActive(): boolean {
    return this.heartbeatTimer !== undefined;
  }

  /** Session-wide counter of models (create_model's model_seq_id). */
  nextModelSeqId(): number {
    return this.modelSeq++;
  }

  /** Session-wide counter shared by create_sampling_session and ephemeral sampler saves (§3.2). */
  nextSamplingSeqId(): number {
    return this.samplingSeq++;
  }

  close(): void {
    this.stopHeartbeat();
    this.http.close();
  }
}
