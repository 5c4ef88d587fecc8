// `cookbook serve`: the OpenAI and Anthropic APIs over one model, on 127.0.0.1. Routes:
// GET /v1/models, GET /v1/models/{id}, POST /v1/chat/completions, POST /v1/completions,
// POST /v1/messages (JSON or SSE with `stream: true`), POST /v1/messages/count_tokens,
// GET /health. Every request is handled on its own, so concurrent requests reach the backend
// concurrently; whatever goes wrong answers that request in its API's error shape.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { completeMessages, countTokens } from './anthropic/messages.js';
import { anthropicErrorBody } from './anthropic/errors.js';
import { CountTokensRequest, MessagesRequest, parseMessagesRequest } from './anthropic/requests.js';
import { AnthropicEventStream, messageRest, messageStart } from './anthropic/sse.js';
import { completeChat, type CompletionLimits } from './chat-completion.js';
import { ApiError, badRequest, toApiError } from './errors.js';
import { recordingSamples, withoutCredentials, type ServedApi, type ServedExchange } from './exchange.js';
import { ChatRequest, CompletionRequest, parseRequest } from './requests.js';
import { checkModel } from './sampling.js';
import type { ServedModel } from './served-model.js';
import { chatRest, chatStart, completionRest, EventStream, type StreamHead } from './sse.js';
import { completeText } from './text-completion.js';

const MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface ServeOptions extends CompletionLimits {
  model: ServedModel;
  /** 0 (default): a free port. */
  port?: number;
  /** Clients must send `Authorization: Bearer <apiKey>` or `x-api-key: <apiKey>` when set. */
  apiKey?: string;
  /** One line per request (method, path, status, milliseconds). */
  log?: (line: string) => void;
  /**
   * Called once per request to a sampling endpoint, after it is answered (or failed), with its
   * rendered prompts and sampled tokens (exchange.ts). It must not throw; what it throws is logged.
   */
  onExchange?: (exchange: ServedExchange) => void;
}

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startServer(o: ServeOptions): Promise<RunningServer> {
  const started = Math.floor(Date.now() / 1000);
  const server: Server = createServer((req, res) => {
    const t0 = Date.now();
    res.on('finish', () => o.log?.(`${req.method} ${req.url} ${res.statusCode} ${Date.now() - t0} ms`));
    handle(o, started, req, res).catch((err) => send(res, toApiError(err, o.model.baseUrl), isAnthropic(req)));
  });
  server.keepAliveTimeout = 65_000; // longer than the clients' pools keep idle connections
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const pathOf = (req: IncomingMessage) => new URL(req.url ?? '/', 'http://x').pathname.replace(/\/+$/, '');

/** The Messages API's routes answer errors in its shape. */
const isAnthropic = (req: IncomingMessage) => pathOf(req).startsWith('/v1/messages');

async function handle(o: ServeOptions, created: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = pathOf(req);
  if (path === '/health' && req.method === 'GET') return json(res, 200, { status: 'ok' });
  checkAuth(o.apiKey, req);
  const { model } = o;
  // Both APIs' model objects in one: the OpenAI clients read id/object/created, Anthropic's id/type/display_name/created_at.
  const card = { id: model.id, object: 'model', created, owned_by: 'durable-cookbook', root: model.baseModel, type: 'model', display_name: model.id, created_at: new Date(created * 1000).toISOString() };
  const route = `${req.method} ${path}`;
  if (route === 'GET /v1/models') return json(res, 200, { object: 'list', data: [card], has_more: false, first_id: model.id, last_id: model.id });
  if (req.method === 'GET' && path.startsWith('/v1/models/')) {
    checkModel(model, decodeURIComponent(path.slice('/v1/models/'.length)));
    return json(res, 200, card);
  }
  if (route === 'POST /v1/chat/completions') {
    const body = parseRequest(ChatRequest, await readJson(req));
    checkModel(model, body.model);
    let stream: EventStream | undefined;
    const head: StreamHead = { id: `chatcmpl-${randomUUID().replaceAll('-', '')}`, created: Math.floor(Date.now() / 1000), model: model.id };
    const open = () => {
      if (!body.stream) return;
      stream = new EventStream(res);
      chatStart(stream, head, body.n ?? 1);
    };
    return finish(o, 'openai.chat.completions', body, res, () => stream, (m) => completeChat(m, body, o, open), (result) => {
      if (!stream) return json(res, 200, result);
      chatRest(stream, head, result, body.stream_options?.include_usage ?? false);
      stream.end();
    });
  }
  if (route === 'POST /v1/completions') {
    const body = parseRequest(CompletionRequest, await readJson(req));
    checkModel(model, body.model);
    let stream: EventStream | undefined;
    const head: StreamHead = { id: `cmpl-${randomUUID().replaceAll('-', '')}`, created: Math.floor(Date.now() / 1000), model: model.id };
    const open = () => {
      if (body.stream) stream = new EventStream(res);
    };
    return finish(o, 'openai.completions', body, res, () => stream, (m) => completeText(m, body, open), (result) => {
      if (!stream) return json(res, 200, result);
      completionRest(stream, head, result, body.stream_options?.include_usage ?? false);
      stream.end();
    });
  }
  if (route === 'POST /v1/messages') {
    const body = parseMessagesRequest(MessagesRequest, await readJson(req));
    checkModel(model, body.model);
    let stream: AnthropicEventStream | undefined;
    const id = `msg_${randomUUID().replaceAll('-', '')}`;
    const open = (promptTokens: number) => {
      if (!body.stream) return;
      stream = new AnthropicEventStream(res);
      messageStart(stream, { id, model: model.id }, promptTokens);
    };
    return finish(o, 'anthropic.messages', body, res, () => stream, async (m) => ({ ...(await completeMessages(m, body, o, open)), id }), (result) => {
      if (!stream) return json(res, 200, result);
      messageRest(stream, result);
      stream.end();
    });
  }
  if (route === 'POST /v1/messages/count_tokens') {
    const body = parseMessagesRequest(CountTokensRequest, await readJson(req));
    checkModel(model, body.model);
    return json(res, 200, await countTokens(model, body));
  }
  const known = ['/v1/models', '/v1/chat/completions', '/v1/completions', '/v1/messages', '/v1/messages/count_tokens'].includes(path);
  throw new ApiError(known ? 405 : 404, `Invalid URL (${req.method} ${path})`, 'invalid_request_error', null, known ? 'method_not_allowed' : 'unknown_url');
}

interface OpenStream {
  fail(err: ApiError): void;
}

/**
 * Sends a result, or its error: as JSON before a stream opened, as an event inside one after.
 * `work` samples through a model that records its calls, which onExchange then receives.
 */
async function finish<T>(
  o: ServeOptions,
  api: ServedApi,
  request: unknown,
  res: ServerResponse,
  stream: () => OpenStream | undefined,
  work: (model: ServeOptions['model']) => Promise<T>,
  done: (result: T) => void,
): Promise<void> {
  const startedAt = Date.now();
  const { model, samples } = o.onExchange ? recordingSamples(o.model) : { model: o.model, samples: [] };
  const report = (outcome: Pick<ServedExchange, 'response' | 'error'>) => {
    if (!o.onExchange) return;
    try {
      o.onExchange({ api, model: o.model.id, request, headers: withoutCredentials(res.req.headers), ...outcome, samples, startedAt, durationMs: Date.now() - startedAt });
    } catch (err) {
      o.log?.(`onExchange failed: ${(err as Error)?.message ?? String(err)}`);
    }
  };
  try {
    const result = await work(model);
    done(result);
    report({ response: result });
  } catch (err) {
    const apiError = toApiError(err, o.model.baseUrl);
    const s = stream();
    if (s) s.fail(apiError);
    else send(res, apiError, api === 'anthropic.messages');
    report({ error: { status: apiError.status, message: apiError.message } });
  }
}

/** The key as the OpenAI clients send it (`Authorization: Bearer`) or as Anthropic's do (`x-api-key`). */
function checkAuth(apiKey: string | undefined, req: IncomingMessage): void {
  if (!apiKey) return;
  const xApiKey = req.headers['x-api-key'];
  const header = typeof xApiKey === 'string' && xApiKey ? xApiKey : (req.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
  if (!header) throw new ApiError(401, "You didn't provide an API key. Send it as `Authorization: Bearer <key>` or `x-api-key: <key>`.", 'invalid_request_error', null, 'invalid_api_key');
  const given = Buffer.from(header);
  const want = Buffer.from(apiKey);
  if (given.length !== want.length || !timingSafeEqual(given, want)) {
    throw new ApiError(401, 'Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key');
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, `the request body exceeds ${MAX_BODY_BYTES} bytes`, 'invalid_request_error', null, 'request_too_large');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw badRequest(`We could not parse the JSON body of your request (${(err as Error).message}). Send valid JSON.`, null, null);
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function send(res: ServerResponse, err: ApiError, anthropic: boolean): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end();
    return;
  }
  json(res, err.status, anthropic ? anthropicErrorBody(err) : err.body());
}
