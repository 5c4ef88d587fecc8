"""HTTP surface of the engine: the Tinker protocol routes (reference §3) on FastAPI."""

import asyncio
import contextlib
import hmac
import json
import logging
import math

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from . import __version__
from .archive import ArchiveDownloads
from .body import Body
from .checkpoint_import import DEFAULT_MAX_IMPORT_MB, IMPORT_ROUTE, CheckpointImports
from .engine import Engine
from .errors import EngineError, bad_request
from .futures import FAILED, PENDING
from .metrics import EngineMetrics
from .tracing import RequestTracer
from .model_shape import model_shape
from .wire import (
    fingerprint_json,
    forward_output_json,
    forward_output_proto,
    parse_forward_backward_proto,
    parse_forward_json,
    sample_output_json,
    sample_output_proto,
)

log = logging.getLogger("tinker_engine")
PROTO = "application/x-protobuf"
API = "/api/v1"

CLIENT_CONFIG = {
    "pjwt_auth_enabled": False,
    "credential_default_source": "api_key",
    "use_pyqwest_transport": False,
    "proto_compress_fwdbwd": False,
    "create_model_via_load_weights": False,
    "parallel_fwdbwd_chunks": True,
    # 0.22.3–0.24 SDKs: send forward_backward as protobuf and route forward through it.
    "proto_write_fwdbwd": True,
    "fwd_via_fwdbwd": True,
}


def _sanitize(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _sanitize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_sanitize(v) for v in value]
    return value


def json_response(data, status: int = 200) -> Response:
    try:
        text = json.dumps(data, allow_nan=False)
    except ValueError:  # JSON has no NaN/inf; report them as null rather than emit invalid JSON
        text = json.dumps(_sanitize(data))
    return Response(text, status_code=status, media_type="application/json")


def error_response(status: int, detail: str) -> Response:
    return json_response({"detail": detail}, status)


class BodyTooLarge(Exception):
    """A body that grew past the limit while it was read (chunked, or a lying Content-Length)."""

    def __init__(self, limit: int, hint: str = ""):
        super().__init__(f"request body larger than {limit} bytes{hint}")
        self.limit = limit


class GuardMiddleware:
    """API-key check and request-size limit, before any route runs (pure ASGI: no buffering). The
    checkpoint import (a tar of a whole checkpoint, streamed to disk) has a limit of its own."""

    def __init__(self, app, api_key: str | None, max_body_bytes: int, tracer: RequestTracer | None = None,
                 max_import_bytes: int = DEFAULT_MAX_IMPORT_MB << 20):
        self.app = app
        self.api_key = api_key
        self.max_body_bytes = max_body_bytes
        self.max_import_bytes = max_import_bytes
        self.tracer = tracer

    def _limit(self, scope) -> tuple:
        if scope["path"] == API + IMPORT_ROUTE:
            return self.max_import_bytes, " (the checkpoint import's limit: --max-import-mb)"
        return self.max_body_bytes, ""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.tracer is not None:
            self.tracer.enter_request(headers.get("traceparent"))
        # Health and metrics answer without a key: load balancers and Prometheus scrape them.
        if scope["path"] not in (f"{API}/healthz", "/metrics"):
            problem = self._auth_problem(headers.get("x-api-key"))
            if problem:
                return await error_response(401, problem)(scope, receive, send)
        limit, hint = self._limit(scope)
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            # Read and discard the body first: answering mid-upload breaks the client's pipe.
            more = True
            while more:
                message = await receive()
                more = message.get("more_body", False) and message["type"] == "http.request"
            return await self._too_large(scope, receive, send, limit, hint)
        received = 0
        started = False

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # Discard the rest before answering 413, so the connection stays usable.
                    more = message.get("more_body", False)
                    while more:
                        rest = await receive()
                        more = rest.get("more_body", False) and rest["type"] == "http.request"
                    raise BodyTooLarge(limit, hint)
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._too_large(scope, receive, send, limit, hint)
        except Exception as exc:  # noqa: BLE001 — the last line of defence for one request
            # Starlette answers an unhandled error with the 500 of the app's handler and then
            # re-raises it; reaching the server, that would close (reset) the keep-alive
            # connection, failing the client's next request too. The answer is already sent.
            if not started:
                log.error("unhandled error on %s: %s: %s", scope.get("path"), type(exc).__name__, exc)
                await error_response(500, f"internal error: {type(exc).__name__}: {exc}")(scope, receive, send)

    def _auth_problem(self, key: str | None) -> str | None:
        if not key:
            return "missing X-API-Key header"
        if self.api_key is not None:
            # Constant time: how long a comparison takes must not tell a caller how much of a key was right.
            return None if hmac.compare_digest(key.encode(), self.api_key.encode()) else "invalid API key"
        if not key.startswith("tml-"):
            return "invalid API key: keys start with 'tml-'"
        return None

    async def _too_large(self, scope, receive, send, limit: int, hint: str):
        await error_response(413, f"request body larger than {limit} bytes{hint}")(scope, receive, send)


# Deepest JSON nesting a request may have. The protocol's deepest bodies (forward_backward:
# body → input → data → datum → model_input → chunks → chunk → tokens) nest 8 levels; anything
# far deeper is refused with a 400 before it can exhaust the parser's or the encoder's recursion.
MAX_JSON_DEPTH = 64


def json_depth_exceeds(data, limit: int) -> bool:
    """Whether `data` nests containers more than `limit` deep (iterative: no recursion)."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def parse_json_body(raw: bytes) -> Body:
    """A request body as a JSON object, or a 400 naming what is wrong with it."""
    if not raw.strip():
        return Body({})
    try:
        data = json.loads(raw)
    except RecursionError:
        raise bad_request(f"malformed JSON body: nested deeper than {MAX_JSON_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise bad_request(f"malformed JSON body: {e}") from None
    # Only a body with more brackets than the limit can nest deeper than it (the cheap check first).
    if isinstance(data, (dict, list)) and raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH:
        if json_depth_exceeds(data, MAX_JSON_DEPTH):
            raise bad_request(f"malformed JSON body: nested deeper than {MAX_JSON_DEPTH} levels")
    return Body(data)


async def read_json(request: Request) -> Body:
    return parse_json_body(await request.body())


async def verify_off_loop(engine: Engine, path) -> None:
    """Hashes a checkpoint's files on a worker thread, so that the engine's own check (on the loop
    thread, where its answer belongs) finds them verified and does not stall other requests."""
    if isinstance(path, str) and path.startswith("tinker://"):
        with contextlib.suppress(Exception):  # a problem is answered by the engine's own check
            await asyncio.to_thread(engine.store.verify, path)


async def sweep_expired_checkpoints(engine: Engine) -> None:
    """Deletes checkpoints whose TTL ran out every `store.sweep_seconds` (the store sweeps once at
    startup; a load in between finds an expired one itself), off the loop thread."""
    while engine.store.sweep_seconds > 0:
        await asyncio.sleep(engine.store.sweep_seconds)
        try:
            await asyncio.to_thread(engine.store.sweep_expired)
        except Exception:  # a bug guard: keep sweeping later, keep serving now
            log.exception("sweeping expired checkpoints failed")


def create_app(engine: Engine, api_key: str | None = None, max_body_bytes: int = 64 << 20,
               max_import_bytes: int = DEFAULT_MAX_IMPORT_MB << 20, refuse_protobuf: bool = False) -> FastAPI:
    metrics = EngineMetrics(engine)
    engine.futures.listeners.append(metrics.future_settled)
    tracer = RequestTracer.from_env()  # None unless OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set
    if tracer is not None:
        engine.futures.listeners.append(tracer.future_settled)
        log.info("exporting request spans to %s", tracer.exporter.url)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        engine.bind_loop(asyncio.get_running_loop())
        sweeper = asyncio.get_running_loop().create_task(sweep_expired_checkpoints(engine))
        yield
        sweeper.cancel()
        engine.shutdown()
        if tracer is not None:
            tracer.shutdown()

    app = FastAPI(
        title="tinker-engine", version=__version__, docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )

    @app.exception_handler(EngineError)
    async def _engine_error(request: Request, exc: EngineError):
        return error_response(exc.status, exc.detail)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        return error_response(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        return error_response(400, str(exc))

    @app.exception_handler(BodyTooLarge)
    async def _body_too_large(request: Request, exc: BodyTooLarge):
        return error_response(413, str(exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        log.exception("unhandled error on %s", request.url.path)
        return error_response(500, f"internal error: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ bootstrap

    def capabilities():
        models = []
        for name in engine.registry.available():
            try:
                spec = engine.registry.resolve(name)
                models.append({"model_name": name, "max_context_length": spec.max_context, **model_shape(spec)})
            except EngineError:
                continue
        return models

    # Each model's shape is computed once, here, before the first request: for a built-in model that
    # builds it on the meta device under the engine's global-RNG lock, which a request's handler on
    # the event loop must never wait for while a base model loads.
    capabilities()

    @app.get(f"{API}/healthz")
    async def healthz():
        # clock_cycles: the --clock-cycle-ms setting and, when on, the engine's clock and cycle counters;
        # sample_service_time: the --sample-ms-per-token/--sample-slots setting and, when on, its slot counters.
        return json_response({"status": "ok", "supported_models": capabilities(), "clock_cycles": engine.clock_info(),
                              "sample_service_time": engine.service_time_info()})

    @app.get("/metrics")
    async def prometheus_metrics():
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get(f"{API}/get_server_capabilities")
    async def get_server_capabilities():
        # What a client may rely on about seq_id (unlike servers that ignore it, which say nothing).
        sequencing = {} if engine.ignore_seq_id else {"seq_id_guarantees": {"ordered": True, "deduplicated": True}}
        return json_response({"supported_models": capabilities(), **sequencing})

    @app.get(f"{API}/debug/training_requests")
    async def training_requests():
        # Every forward_backward and optim_step accepted to run, per model, in arrival order: what a
        # test counts to show that no step reached the server twice.
        return json_response({"models": engine.training_requests})

    @app.post(f"{API}/client/config")
    async def client_config(request: Request):
        await read_json(request)
        return json_response({**CLIENT_CONFIG, "custom_loss_server_side": engine.custom_loss_server_side})

    @app.post(f"{API}/client/dynamic_config")
    async def client_dynamic_config(request: Request):
        await read_json(request)
        return json_response({"refresh_interval_sec": 300})

    @app.post(f"{API}/create_session")
    async def create_session(request: Request):
        return json_response(engine.create_session(await read_json(request)))

    @app.post(f"{API}/session_heartbeat")
    async def session_heartbeat(request: Request):
        return json_response(engine.heartbeat(await read_json(request)))

    @app.post(API + "/sessions/{session_id}/finish")
    async def finish_session(session_id: str, request: Request):
        return json_response(engine.finish_session(session_id, await read_json(request)))

    @app.post(f"{API}/save_weights_external")
    async def save_weights_external(request: Request):
        # A sequenced model request: refused, but its seq id is consumed so later requests still run.
        body = await read_json(request)
        engine.reject(body.raw("model_id"), body.raw("seq_id"), "save_weights_external",
                      bad_request("save_weights_external (weights in an external format) is not served by this engine; "
                                  "checkpoints are PEFT adapters under the data dir"))

    @app.post(f"{API}/copy_weights")
    async def copy_weights():
        raise bad_request("copy_weights (between projects) is not served by this engine")

    @app.post(f"{API}/create_custom_loss")
    async def create_custom_loss(request: Request):
        return json_response(engine.create_custom_loss(await read_json(request)))

    @app.post(f"{API}/telemetry")
    async def telemetry(request: Request):
        await request.body()
        return json_response({"status": "accepted"})

    # ------------------------------------------------------------------- training

    @app.post(f"{API}/create_model")
    async def create_model(request: Request):
        return json_response(engine.create_model(await read_json(request)))

    @app.post(f"{API}/get_info")
    async def get_info(request: Request):
        return json_response(engine.get_info(await read_json(request)))

    @app.post(f"{API}/unload_model")
    async def unload_model(request: Request):
        return json_response(engine.unload_model(await read_json(request)))

    @app.post(f"{API}/forward_backward")
    async def forward_backward(request: Request):
        if refuse_protobuf and PROTO in request.headers.get("content-type", ""):
            # --refuse-protobuf (tests): what a JSON-only server answers a binary body, before reading it.
            return Response("Internal Server Error", status_code=500, media_type="text/plain")
        if PROTO in request.headers.get("content-type", ""):
            if request.headers.get("content-encoding", "identity") not in ("", "identity"):
                raise bad_request("compressed forward_backward bodies are not supported (proto_compress_fwdbwd=false)")
            model_id, seq_id, req = parse_forward_backward_proto(await request.body())
        else:
            body = await read_json(request)
            wrapper = "forward_backward_input" if body.has("forward_backward_input") else "forward_input"
            forward_only = wrapper == "forward_input" or body.bool("forward_only", False)
            model_id, seq_id, req = parse_json_forward(body, wrapper, forward_only)
        return json_response(engine.forward_backward(model_id, seq_id, req))

    @app.post(f"{API}/forward")
    async def forward(request: Request):
        model_id, seq_id, req = parse_json_forward(await read_json(request), "forward_input", True)
        return json_response(engine.forward_backward(model_id, seq_id, req))

    def parse_json_forward(body: Body, wrapper: str, forward_only: bool):
        model_id, seq_id = body.str("model_id"), body.int("seq_id")
        try:
            return model_id, seq_id, parse_forward_json(body, wrapper, forward_only)
        except EngineError as e:
            engine.reject(model_id, seq_id, fingerprint_json("malformed", body.raw(wrapper)), e)

    @app.post(f"{API}/optim_step")
    async def optim_step(request: Request):
        return json_response(engine.optim_step(await read_json(request)))

    @app.post(f"{API}/save_weights")
    async def save_weights(request: Request):
        return json_response(engine.save_weights(await read_json(request)))

    @app.post(f"{API}/save_weights_for_sampler")
    async def save_weights_for_sampler(request: Request):
        return json_response(engine.save_weights_for_sampler(await read_json(request)))

    @app.post(f"{API}/load_weights")
    async def load_weights(request: Request):
        body = await read_json(request)
        await verify_off_loop(engine, body.raw("path"))
        return json_response(engine.load_weights(body))

    @app.post(f"{API}/weights_info")
    async def weights_info(request: Request):
        body = await read_json(request)
        await verify_off_loop(engine, body.raw("tinker_path"))
        return json_response(engine.weights_info(body))

    # ------------------------------------------------------------------- sampling

    @app.post(f"{API}/create_sampling_session")
    async def create_sampling_session(request: Request):
        body = await read_json(request)
        await verify_off_loop(engine, body.raw("model_path"))
        return json_response(engine.create_sampling_session(body))

    @app.get(API + "/samplers/{sampler_id:path}")
    async def get_sampler(sampler_id: str):
        return json_response(engine.get_sampler(sampler_id))

    @app.post(f"{API}/asample")
    async def asample(request: Request):
        body = await read_json(request)
        await verify_off_loop(engine, body.raw("model_path"))
        return json_response(engine.asample(body))

    # -------------------------------------------------------------------- futures

    @app.post(f"{API}/retrieve_future")
    async def retrieve_future(request: Request):
        body = await read_json(request)
        request_id = body.str("request_id")
        fut = engine.futures.get(request_id)
        if fut is None:
            raise EngineError(404, f"unknown or expired request_id {request_id!r}")
        if fut.state == PENDING:
            try:
                await asyncio.wait_for(fut.event.wait(), timeout=engine.long_poll_seconds)
            except asyncio.TimeoutError:
                # 408 = "not ready, poll again": retried silently by every SDK era.
                return json_response(
                    {"type": "try_again", "request_id": request_id, "queue_state": "active"}, status=408
                )
        if fut.state == FAILED:
            return json_response({"error": fut.error, "category": fut.category})
        wants_proto = PROTO in request.headers.get("accept", "")
        if fut.request_type in ("ForwardBackward", "Forward"):
            if wants_proto:
                return Response(forward_output_proto(fut.result), media_type=PROTO)
            return json_response(forward_output_json(fut.result))
        if fut.request_type == "Sample":
            if wants_proto:
                return Response(sample_output_proto(fut.result), media_type=PROTO)
            return json_response(sample_output_json(fut.result))
        return json_response(fut.result)

    # ------------------------------------------------------------ runs / checkpoints

    @app.get(f"{API}/training_runs")
    async def training_runs(limit: int = 20, offset: int = 0):
        return json_response(engine.training_runs(max(0, limit), max(0, offset)))

    @app.get(API + "/training_runs/{run_id}")
    async def training_run(run_id: str):
        return json_response(engine.training_run(run_id))

    @app.get(API + "/training_runs/{run_id}/checkpoints")
    async def run_checkpoints(run_id: str):
        if engine.store.load_run(run_id) is None:
            raise EngineError(404, f"unknown training run {run_id!r}")
        return json_response({"checkpoints": engine.store.list(run_id)})

    @app.delete(API + "/training_runs/{run_id}/checkpoints/{kind}/{name}")
    async def delete_checkpoint(run_id: str, kind: str, name: str):
        engine.store.delete(run_id, f"{kind}/{name}")
        return Response(status_code=204)

    @app.put(API + "/training_runs/{run_id}/checkpoints/{kind}/{name}/ttl")
    async def set_checkpoint_ttl(run_id: str, kind: str, name: str, request: Request):
        body = await read_json(request)
        engine.store.set_ttl(run_id, f"{kind}/{name}", body.int("ttl_seconds", None))
        return Response(status_code=204)

    @app.get(f"{API}/checkpoints")
    async def all_checkpoints(limit: int = 100, offset: int = 0):
        items = engine.store.list_all()
        return json_response(
            {
                "checkpoints": items[offset : offset + limit],
                "cursor": {"offset": offset, "limit": limit, "total_count": len(items)},
            }
        )

    @app.get(f"{API}/sessions")
    async def sessions(limit: int = 20, offset: int = 0):
        ids = list(engine.sessions)
        return json_response({"sessions": ids[offset : offset + limit]})

    @app.get(API + "/sessions/{session_id}")
    async def session(session_id: str):
        s = engine.session(session_id)
        return json_response({"training_run_ids": s.training_run_ids, "sampler_ids": s.sampler_ids})

    # Checkpoint archives (§7, SDK ≤ 0.25): the route behind the key check, signed downloads before it.
    archives = ArchiveDownloads(engine, API)
    archives.add_routes(app)
    # Checkpoint import (an engine extension): an archive from another engine, stored under its path.
    CheckpointImports(engine, API, max_import_bytes).add_routes(app)
    return archives.wrap(GuardMiddleware(app, api_key, max_body_bytes, tracer, max_import_bytes))
