// An in-process Tinker server for faults the real engine cannot be made to produce (408 storms,
// 5xx bursts, dropped connections, slow futures, 409s). It behaves like a real server where
// exactly-once matters: per-model execution strictly in seq order with buffering, dedupe on
// (model id, seq id) returning the original request id, and 409 for a reused id with a different
// payload. `applied` records every (model, seq) the server actually executed, so tests can prove
// nothing ran twice.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  decodeForwardBackwardRequest,
  encodeForwardBackwardOutput,
  encodeSampleResponse,
  type ForwardBackwardRequestMessage,
} from '../../src/backends/proto.js';
import type { Datum, ForwardBackwardOutput, SampleResponse } from '../../src/backends/types.js';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  raw: Buffer;
  json: any;
  proto?: ForwardBackwardRequestMessage;
}

export type FaultAction =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { drop: 'before' | 'after' } // destroy the socket before / after the request is processed
  | { delayMs: number }; // then handle normally

export interface Fault {
  path: string; // endpoint path, e.g. /api/v1/forward_backward
  times: number;
  action: FaultAction;
  when?: (req: RecordedRequest) => boolean;
}

interface Future {
  requestId: string;
  readyAt: number;
  /** False while a sequenced request waits for its predecessors. */
  executed: () => boolean;
  result: () => { json?: unknown; proto?: Uint8Array; error?: { error: string; category: string } };
  kind: 'fb' | 'sample' | 'json';
}

interface ModelState {
  next: number; // next seq id to execute
  seen: Map<number, { hash: string; requestId: string }>;
  buffered: Map<number, () => void>;
  accumulatedWeightSum: number;
  steps: number;
}

export interface FakeServerOptions {
  clientConfig?: Record<string, unknown> | 'absent';
  /** Result latency per future (ms) — "slow futures". */
  futureDelayMs?: number;
  /** How long retrieve_future holds a not-ready future before answering (long-poll). */
  longPollMs?: number;
  /** Answer a not-ready future with 408 instead of try_again. */
  notReadyStatus?: 200 | 408;
}

/** Deterministic fake logprob of a target token. */
export function fakeLogprob(token: number, step: number): number {
  return -((token % 7) + 1) / 10 - step / 100;
}

export class FakeTinkerServer {
  readonly requests: RecordedRequest[] = [];
  readonly applied: Array<{ model: string; seq: number; op: string }> = [];
  readonly faults: Fault[] = [];
  readonly opts: Required<Omit<FakeServerOptions, 'clientConfig'>> & { clientConfig: FakeServerOptions['clientConfig'] };
  private server: Server | undefined;
  private readonly models = new Map<string, ModelState>();
  private readonly futures = new Map<string, Future>();
  private readonly sampleSeen = new Map<string, string>();
  private sessionCount = 0;
  private forgottenUpTo = 0;
  private modelCount = new Map<string, number>();
  private clock = 0;
  baseUrl = '';

  constructor(opts: FakeServerOptions = {}) {
    this.opts = {
      clientConfig: opts.clientConfig ?? {},
      futureDelayMs: opts.futureDelayMs ?? 0,
      longPollMs: opts.longPollMs ?? 50,
      notReadyStatus: opts.notReadyStatus ?? 200,
    };
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 5_000;
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }

  /** Simulates a server restart as far as sessions go: every existing session becomes unknown. */
  forgetSessions(): void {
    this.forgottenUpTo = this.sessionCount;
  }

  private knownSession(id: unknown): boolean {
    const n = Number(String(id).replace('sess', ''));
    return n > this.forgottenUpTo && n <= this.sessionCount;
  }

  fault(f: Fault): void {
    this.faults.push(f);
  }

  requestsTo(path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** How many times each (model, seq) was executed; a correct client keeps every count at 1. */
  appliedCounts(): Map<string, number> {
    const m = new Map<string, number>();
    for (const a of this.applied) m.set(`${a.model}#${a.seq}`, (m.get(`${a.model}#${a.seq}`) ?? 0) + 1);
    return m;
  }

  modelSteps(model: string): number {
    return this.models.get(model)?.steps ?? 0;
  }

  // ---------------------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://x');
    const rec: RecordedRequest = { method: req.method ?? 'GET', path: url.pathname, headers: req.headers, raw, json: undefined };
    const ct = String(req.headers['content-type'] ?? '');
    if (ct.includes('application/x-protobuf')) rec.proto = decodeForwardBackwardRequest(raw);
    else if (raw.length) {
      try {
        rec.json = JSON.parse(raw.toString('utf8'));
      } catch {
        rec.json = undefined;
      }
    }
    this.requests.push(rec);

    const fault = this.faults.find((f) => f.times > 0 && f.path === rec.path && (!f.when || f.when(rec)));
    let dropAfter = false;
    if (fault) {
      fault.times--;
      const a = fault.action;
      if ('delayMs' in a) await new Promise((r) => setTimeout(r, a.delayMs));
      else if ('drop' in a) {
        if (a.drop === 'before') return void req.socket.destroy();
        dropAfter = true;
      } else {
        return this.send(res, a.status, a.body, a.headers);
      }
    }
    const reply = await this.route(rec, url);
    if (dropAfter) return void req.socket.destroy();
    if (reply.proto) {
      res.writeHead(reply.status, { 'content-type': 'application/x-protobuf' });
      res.end(Buffer.from(reply.proto));
      return;
    }
    this.send(res, reply.status, reply.body);
  }

  private send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(text);
  }

  private newFuture(requestId: string, kind: Future['kind'], result: Future['result'], executed: () => boolean = () => true): void {
    this.futures.set(requestId, { requestId, kind, result, executed, readyAt: Date.now() + this.opts.futureDelayMs });
  }

  /** Sequenced training request: dedupe, conflict, in-order execution with buffering. */
  private sequenced(model: string, seq: number, payload: Buffer | string, op: string, run: () => Future['result']): { status: number; body: unknown } {
    const state = this.models.get(model);
    if (!state) return { status: 404, body: { detail: `unknown model ${model}` } };
    const hash = createHash('sha256').update(payload).digest('hex');
    const prior = state.seen.get(seq);
    if (prior) {
      if (prior.hash !== hash) return { status: 409, body: { detail: `seq_id ${seq} of ${model} was already used with a different payload` } };
      return { status: 200, body: { request_id: prior.requestId, model_id: model } };
    }
    if (seq < state.next) return { status: 409, body: { detail: `seq_id ${seq} is behind ${state.next}` } };
    const requestId = `${model}:${seq}`;
    state.seen.set(seq, { hash, requestId });
    let result: Future['result'] | undefined;
    const execute = () => {
      this.applied.push({ model, seq, op });
      result = run();
    };
    state.buffered.set(seq, execute);
    while (state.buffered.has(state.next)) {
      const fn = state.buffered.get(state.next)!;
      state.buffered.delete(state.next);
      state.next++;
      fn();
    }
    this.newFuture(
      requestId,
      op === 'fb' || op === 'forward' ? 'fb' : 'json',
      () => result!(),
      () => result !== undefined,
    );
    return { status: 200, body: { request_id: requestId, model_id: model } };
  }

  private fbResult(model: string, data: Datum[], forwardOnly: boolean): Future['result'] {
    const state = this.models.get(model)!;
    const outputs = data.map((d) => {
      const targets = d.loss_fn_inputs.target_tokens?.data ?? [];
      return targets.map((t) => Math.fround(fakeLogprob(t, state.steps)));
    });
    let loss = 0;
    data.forEach((d, i) => {
      const w = d.loss_fn_inputs.weights?.data ?? outputs[i].map(() => 1);
      outputs[i].forEach((lp, j) => (loss -= w[j] * lp));
      if (!forwardOnly) state.accumulatedWeightSum += w.reduce((a, b) => a + b, 0);
    });
    const clock = ++this.clock;
    const out: ForwardBackwardOutput = {
      loss_fn_output_type: 'CrossEntropyLossReturn',
      loss_fn_outputs: outputs.map((lp) => ({ logprobs: { data: lp, dtype: 'float32', shape: [lp.length] } })),
      metrics: { 'loss:sum': loss, 'clock_cycle:unique': clock, 'datums:mean': data.length },
    };
    return () => ({ json: out });
  }

  private async route(rec: RecordedRequest, url: URL): Promise<{ status: number; body?: unknown; proto?: Uint8Array }> {
    const b = rec.json ?? {};
    const p = rec.path;
    if (p === '/api/v1/healthz') return { status: 200, body: { status: 'ok' } };
    if (p === '/api/v1/client/config') {
      if (this.opts.clientConfig === 'absent') return { status: 404, body: { detail: 'Not Found' } };
      return { status: 200, body: this.opts.clientConfig };
    }
    if (p === '/api/v1/create_session') return { status: 200, body: { session_id: `sess${++this.sessionCount}`, type: 'create_session' } };
    if (p === '/api/v1/session_heartbeat') {
      return this.knownSession(b.session_id) ? { status: 200, body: { type: 'session_heartbeat' } } : { status: 404, body: { detail: 'unknown session' } };
    }
    if (p === '/api/v1/get_server_capabilities') return { status: 200, body: { supported_models: [{ model_name: 'tiny-qwen3' }, {}] } };
    if (p === '/api/v1/create_model' || p === '/api/v1/create_sampling_session') {
      if (!this.knownSession(b.session_id)) return { status: 404, body: { detail: `unknown session ${b.session_id}` } };
    }
    if (p === '/api/v1/create_model') {
      const model = `${b.session_id}:train:${b.model_seq_id}`;
      if (!this.models.has(model)) {
        this.models.set(model, { next: 1, seen: new Map(), buffered: new Map(), accumulatedWeightSum: 0, steps: 0 });
        this.modelCount.set(String(b.session_id), (this.modelCount.get(String(b.session_id)) ?? 0) + 1);
        this.applied.push({ model, seq: 0, op: 'create_model' });
      }
      const requestId = `${model}:0`;
      this.newFuture(requestId, 'json', () => ({ json: { model_id: model, type: 'create_model' } }));
      return { status: 200, body: { request_id: requestId, model_id: model } };
    }
    if (p === '/api/v1/forward_backward' || p === '/api/v1/forward') {
      let msg: ForwardBackwardRequestMessage;
      if (rec.proto) msg = rec.proto;
      else {
        const input = b.forward_backward_input ?? b.forward_input;
        msg = { modelId: b.model_id, seqId: b.seq_id, data: input.data, lossFn: input.loss_fn, lossFnConfig: input.loss_fn_config, forwardOnly: p === '/api/v1/forward' };
      }
      const op = msg.forwardOnly ? 'forward' : 'fb';
      return this.sequenced(msg.modelId, msg.seqId, rec.raw, op, () => this.fbResult(msg.modelId, msg.data, msg.forwardOnly));
    }
    if (p === '/api/v1/optim_step') {
      return this.sequenced(b.model_id, b.seq_id, rec.raw, 'optim_step', () => {
        const s = this.models.get(b.model_id)!;
        s.steps++;
        const metrics = b.adam_params?.grad_clip_norm > 0 ? { 'unclipped_grad_l2:mean': s.accumulatedWeightSum } : null;
        s.accumulatedWeightSum = 0;
        return () => ({ json: { metrics } });
      });
    }
    if (p === '/api/v1/save_weights') {
      return this.sequenced(b.model_id, b.seq_id, rec.raw, 'save_weights', () => () => ({ json: { path: `tinker://${b.model_id}/weights/${b.path}`, type: 'save_weights' } }));
    }
    if (p === '/api/v1/save_weights_for_sampler') {
      return this.sequenced(b.model_id, b.seq_id, rec.raw, 'save_weights_for_sampler', () => () => ({
        json:
          b.path != null
            ? { path: `tinker://${b.model_id}/sampler_weights/${b.path}`, sampling_session_id: null }
            : { path: null, sampling_session_id: `${String(b.model_id).split(':train:')[0]}:sample:${b.sampling_session_seq_id}` },
      }));
    }
    if (p === '/api/v1/load_weights') {
      return this.sequenced(b.model_id, b.seq_id, rec.raw, 'load_weights', () => () => ({ json: { path: b.path, model_id: b.model_id, type: 'load_weights' } }));
    }
    if (p === '/api/v1/weights_info') return { status: 200, body: { base_model: 'tiny-qwen3', is_lora: true, lora_rank: 4, train_mlp: false } };
    if (p === '/api/v1/create_sampling_session') {
      return { status: 200, body: { sampling_session_id: `${b.session_id}:sample:${b.sampling_session_seq_id}` } };
    }
    if (p === '/api/v1/asample') {
      const key = `${b.sampling_session_id}#${b.seq_id}`;
      const existing = this.sampleSeen.get(key);
      if (existing) return { status: 200, body: { request_id: existing } };
      const requestId = `${key}:${this.sampleSeen.size}`;
      this.sampleSeen.set(key, requestId);
      const prompt: number[] = b.prompt.chunks.flatMap((c: { tokens: number[] }) => c.tokens);
      const resp: SampleResponse = {
        sequences: Array.from({ length: b.num_samples }, (_, i) => ({
          stop_reason: 'length' as const,
          tokens: [10 + i, 11, 12].slice(0, b.sampling_params.max_tokens ?? 3),
          logprobs: [-0.5, -0.25, -0.125].slice(0, b.sampling_params.max_tokens ?? 3),
        })),
        prompt_logprobs: b.prompt_logprobs ? prompt.map((t, i) => (i === 0 ? null : Math.fround(fakeLogprob(t, 0)))) : null,
        topk_prompt_logprobs:
          b.topk_prompt_logprobs > 0 ? prompt.map((_, i) => (i === 0 ? null : Array.from({ length: b.topk_prompt_logprobs }, (_, k) => [k + 1, -0.5 * (k + 1)] as [number, number]))) : null,
      };
      this.newFuture(requestId, 'sample', () => ({ json: resp }));
      return { status: 200, body: { request_id: requestId } };
    }
    if (p === '/api/v1/retrieve_future') return this.retrieve(rec);
    if (p === '/api/v1/unload_model') {
      this.models.delete(b.model_id);
      this.newFuture(`unload:${b.model_id}`, 'json', () => ({ json: { model_id: b.model_id } }));
      return { status: 200, body: { request_id: `unload:${b.model_id}` } };
    }
    const ckpt = /^\/api\/v1\/training_runs\/([^/]+)\/checkpoints(?:\/(.+))?$/.exec(p);
    if (ckpt) {
      if (rec.method === 'DELETE') return { status: 200 };
      return {
        status: 200,
        body: { checkpoints: [{ checkpoint_id: 'weights/a', checkpoint_type: 'training', tinker_path: `tinker://${ckpt[1]}/weights/a`, time: '2026-01-01T00:00:00Z' }] },
      };
    }
    void url;
    return { status: 404, body: { detail: 'Not Found' } };
  }

  private async retrieve(rec: RecordedRequest): Promise<{ status: number; body?: unknown; proto?: Uint8Array }> {
    const id = rec.json?.request_id;
    const f = this.futures.get(id);
    if (!f) return { status: 404, body: { detail: `unknown request ${id}` } };
    const deadline = Date.now() + this.opts.longPollMs;
    const ready = () => f.executed() && Date.now() >= f.readyAt;
    while (!ready() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    if (!ready()) {
      return { status: this.opts.notReadyStatus, body: { type: 'try_again', request_id: id, queue_state: 'active' } };
    }
    const r = f.result();
    if (r.error) return { status: 200, body: r.error };
    const wantsProto = String(rec.headers.accept ?? '').includes('application/x-protobuf');
    if (wantsProto && f.kind === 'fb') return { status: 200, proto: encodeForwardBackwardOutput(r.json as ForwardBackwardOutput) };
    if (wantsProto && f.kind === 'sample') return { status: 200, proto: encodeSampleResponse(r.json as SampleResponse) };
    return { status: 200, body: r.json };
  }
}

export async function startFakeServer(opts?: FakeServerOptions): Promise<FakeTinkerServer> {
  return new FakeTinkerServer(opts).start();
}
