"""Engine state and request semantics: sessions, training models, samplers, ordering, dedupe.

All bookkeeping happens on the asyncio loop thread; tensor work runs on compute threads, in
submission order. Training operations run on the compute thread; a model's requests are
dispatched to it strictly by seq_id (out-of-order arrivals wait in a buffer), so it sees each
model's operations in sequence order. Sample requests run there too with the reference sampler
(with `continuous_batching` they join a shared decode batch; see batching.py); with the fast
sampler (fast_decode.py) they run on a sampling thread of their own, beside training.
"""

import asyncio
import collections
import itertools
import logging
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import torch

from . import checkpoints as ckpt
from .batching import DecodeJob, DecodePool
from .base_models import BaseModelCache, BaseModelSpec, ModelRegistry, instance_sharing_weights
from .body import Body
from .clock import CycleClock
from .compute import ComputeThread
from .service_time import SampleServiceTime
from .errors import EngineError, RequestFailed, bad_request, conflict, not_found
from .fast_decode import FastJob, FastSampler, unsupported_reason
from .futures import FAILED, FutureStore
from .lora import LoraSpec, attach_lora, load_adapter_state
from .custom_loss import compile_loss, validate_custom
from .prompt_scoring import parse_scoring_options
from .sampler import SamplingParams, generate
from .trainer import ADAM_DEFAULTS, TrainingModel
from .stability import StabilityStore, check_provenance
from .validation import validate_forward
from .images import is_vision_model, resolve_chunks, resolve_datums
from .wire import ForwardRequest, chunks_fingerprint, fingerprint_json, parse_chunks_json

log = logging.getLogger("tinker_engine")

MAX_SEQ_LOOKAHEAD = 100_000
MAX_NUM_SAMPLES = 256
MAX_TOPK_PROMPT_LOGPROBS = 1000
DEFAULT_MAX_TOKENS = 128
SAMPLER_MODEL_CACHE = 8
MAX_EPHEMERAL_SAMPLERS = 256
SETTLED_LATER = object()


@dataclass
class SeqRecord:
    fingerprint: str
    request_id: str | None = None
    error: tuple | None = None  # (status, detail) of a request rejected at submit time
    # Set when the request failed because the disk was full: the weights version it ran on, so
    # that a resend can redo it (only while the weights are still those).
    redo_version: int | None = None


@dataclass
class ModelHandle:
    model_id: str
    session_id: str
    spec: BaseModelSpec
    lora: LoraSpec
    user_metadata: dict
    create_fingerprint: str
    trainer: TrainingModel | None = None
    create_error: str | None = None
    unloaded: bool = False
    next_seq: int = 1
    buffered: dict = field(default_factory=dict)
    seen: dict = field(default_factory=dict)
    last_request_time: str = field(default_factory=ckpt.now_iso)


@dataclass
class SamplerHandle:
    sampler_id: str
    session_id: str
    spec: BaseModelSpec
    model_path: str | None = None
    lora: LoraSpec | None = None
    adapter: dict | None = None  # ephemeral samplers carry their weights in memory
    fingerprint: str = ""
    seen: dict = field(default_factory=dict)
    serial: int = field(default_factory=itertools.count().__next__)


@dataclass
class Session:
    session_id: str
    tags: list
    user_metadata: dict
    sdk_version: str
    created_at: str = field(default_factory=ckpt.now_iso)
    last_heartbeat: float = field(default_factory=time.time)
    training_run_ids: list = field(default_factory=list)
    sampler_ids: list = field(default_factory=list)
    finished: dict | None = None  # {"reason": {...}, "detail": ...}; the first finish wins


def sequence_ids(request_id: str, num_samples: int) -> list:
    """SDK 0.38's `sample_sequence_ids`: one id per sample, fixed at submission (a resend of the
    same seq id gets the same ids), unique within the engine."""
    return [f"{request_id}:{i}" for i in range(num_samples)]


def keep_last_prompt_logprobs(result: dict, last_n: int | None) -> dict:
    """SDK 0.38's `prompt_logprobs_last_n`: prompt logprobs (and top-k rows) only for the last N
    prompt positions; earlier positions are null (NaN on the protobuf wire)."""
    if last_n is None:
        return result
    for key in ("prompt_logprobs", "topk_prompt_logprobs"):
        rows = result.get(key)
        if rows is not None:
            cut = max(0, len(rows) - last_n)
            result[key] = [None] * cut + rows[cut:]
    return result


# Why Dimuon is refused rather than implemented: SDK 0.38 names it and its per-step knobs
# (learning_rate, beta1, grad_clip_norm) but not its update rule (orthogonalisation method and
# iterations, update scaling, weight decay, what non-matrix parameters get), so any implementation
# here would be a guess that trains differently from Tinker's: a silent wrong answer.
UNDEFINED_OPTIMIZER = "SDK 0.38 does not define its update rule; this engine trains with adamw only"


def check_optimizer_config(body: Body) -> None:
    """SDK 0.38 names the optimizer at model creation; this engine trains with AdamW only and
    refuses any other (never trains a Dimuon request with Adam)."""
    config = body.obj("optimizer_config", None)
    kind = "adamw" if config is None else config.str("type", "adamw")
    if kind != "adamw":
        raise bad_request(f"optimizer_config.type {kind!r} is not served by this engine ({UNDEFINED_OPTIMIZER})")


def parse_adam(body: Body) -> dict:
    raw = body.obj("adam_params", None)
    adam = dict(ADAM_DEFAULTS)
    if raw is not None:
        for key, default in ADAM_DEFAULTS.items():
            adam[key] = raw.float(key, default)
    if adam["learning_rate"] < 0:
        raise bad_request("adam_params.learning_rate must be >= 0")
    for key in ("beta1", "beta2"):
        if not 0 <= adam[key] < 1:
            raise bad_request(f"adam_params.{key} must be in [0, 1)")
    for key in ("eps", "weight_decay", "grad_clip_norm"):
        if adam[key] < 0:
            raise bad_request(f"adam_params.{key} must be >= 0")
    return adam


def parse_lora(body: Body) -> LoraSpec:
    raw = body.obj("lora_config", None)
    if raw is None:
        return LoraSpec()
    spec = LoraSpec(
        rank=raw.int("rank", 32),
        seed=raw.int("seed", 0),
        train_attn=raw.bool("train_attn", True),
        train_mlp=raw.bool("train_mlp", True),
        train_unembed=raw.bool("train_unembed", True),
    )
    if not 1 <= spec.rank <= 4096:
        raise bad_request(f"lora_config.rank must be between 1 and 4096, got {spec.rank}")
    if not (spec.train_attn or spec.train_mlp or spec.train_unembed):
        raise bad_request("lora_config: at least one of train_attn, train_mlp, train_unembed must be true")
    return spec


def parse_sampling_params(body: Body) -> SamplingParams:
    raw = body.obj("sampling_params", None) or Body({}, "sampling_params")
    params = SamplingParams(
        max_tokens=raw.int("max_tokens", DEFAULT_MAX_TOKENS),
        temperature=raw.float("temperature", 1.0),
        top_k=raw.int("top_k", -1),
        top_p=raw.float("top_p", 1.0),
        seed=raw.int("seed", None),
    )
    if params.max_tokens < 0:
        raise bad_request("sampling_params.max_tokens must be >= 0")
    if params.temperature < 0:
        raise bad_request("sampling_params.temperature must be >= 0")
    if not 0 < params.top_p <= 1:
        raise bad_request("sampling_params.top_p must be in (0, 1]")
    stop = raw.raw("stop")
    if isinstance(stop, list) and not stop:
        params.stop_at_eos = False
    elif isinstance(stop, str):
        params.stop_strings = [stop]
    elif isinstance(stop, list):
        if all(isinstance(s, str) for s in stop):
            params.stop_strings = list(stop)
        elif all(isinstance(s, int) and not isinstance(s, bool) for s in stop):
            params.stop_tokens = list(stop)
        else:
            raise bad_request("sampling_params.stop must be a string, a list of strings or a list of token ids")
    elif stop is not None:
        raise bad_request("sampling_params.stop must be a string, a list of strings or a list of token ids")
    return params


class Engine:
    def __init__(self, data_dir: Path, device: torch.device, dtype: torch.dtype, aliases: dict | None = None,
                 max_batch_tokens: int = 8192, long_poll_seconds: float = 20.0, continuous_batching: bool = False,
                 sampler: str = "reference", kv_cache_bytes: int = 2 << 30, max_decode_rows: int = 512,
                 clock_cycle_ms: float = 0, custom_loss_server_side: bool = False,
                 sample_ms_per_token: float = 0, sample_slots: int = 1, exact_attention_backward: bool = True,
                 ignore_seq_id: bool = False):
        self.store = ckpt.CheckpointStore(data_dir)
        # --ignore-seq-id: behave as servers that neither order nor deduplicate a model's requests by
        # seq_id (SkyRL-tx): each request runs once per arrival, in arrival order.
        self.ignore_seq_id = ignore_seq_id
        # Every forward_backward / optim_step that was accepted to run, per model (debug endpoint):
        # what tests count to show that no step reached the server twice.
        self.training_requests: collections.defaultdict = collections.defaultdict(list)
        self._arrivals = itertools.count(1)
        # SDK 0.38 uploads custom losses only when client/config says so (off unless asked for).
        self.custom_loss_server_side = custom_loss_server_side
        self.custom_losses: dict = {}  # loss_id → CustomLoss (session-scoped, in memory)
        self.registry = ModelRegistry(aliases)
        self.bases = BaseModelCache(device, dtype)
        self.device = device
        self.max_batch_tokens = max_batch_tokens
        self.exact_attention_backward = exact_attention_backward
        self.long_poll_seconds = long_poll_seconds
        self.futures = FutureStore()
        # Sequences sampled with record_stability_info, for provenance checks (stability.py).
        self.stability = StabilityStore()
        self.sessions: dict = {}
        self.models: dict = {}
        self.samplers: dict = {}
        self.ephemeral_order: collections.deque = collections.deque()
        self.sampler_models: collections.OrderedDict = collections.OrderedDict()
        self._sampler_models_lock = threading.Lock()
        cuda = device if device.type == "cuda" else None
        self.compute = ComputeThread(DecodePool(device) if continuous_batching else None, cuda_device=cuda)
        self.fast = FastSampler(device, kv_cache_bytes, max_decode_rows) if sampler == "fast" else None
        self.sampling = (
            ComputeThread(self.fast, name="sampling", cuda_device=cuda) if self.fast is not None else None
        )
        self._fast_unsupported: dict = {}  # base model name → why it samples on the reference path
        # With --clock-cycle-ms, sequenced model operations wait for a cycle boundary (clock.py).
        self.clock = CycleClock(clock_cycle_ms, self.compute) if clock_cycle_ms > 0 else None
        # With --sample-ms-per-token, a sample result is held for its emulated service time (service_time.py).
        self.service_time = SampleServiceTime(sample_ms_per_token, sample_slots) if sample_ms_per_token > 0 else None
        self.sample_slots = sample_slots
        self.loop: asyncio.AbstractEventLoop | None = None
        self.started_at = time.time()

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        if self.clock is not None:
            self.clock.start(loop)

    def clock_info(self) -> dict:
        """The emulated clock cycles (healthz): `{"cycle_ms": 0}` when off."""
        return self.clock.info() if self.clock is not None else {"cycle_ms": 0}

    def service_time_info(self) -> dict:
        """The emulated sampling service time (healthz): `{"ms_per_token": 0, "slots": K}` when off."""
        if self.service_time is None:
            return {"ms_per_token": 0, "slots": self.sample_slots}
        return self.service_time.info()

    def shutdown(self) -> None:
        if self.clock is not None:
            self.clock.stop()
        if self.service_time is not None:
            self.service_time.stop()
        self.compute.shutdown()
        if self.sampling is not None:
            self.sampling.shutdown()

    # ----------------------------------------------------------------------- execution

    def _dispatch(self, fut, fn, thread: ComputeThread | None = None) -> None:
        """Runs fn() on a compute thread (by default the training one) and settles `fut` on the
        loop thread (unless fn returns SETTLED_LATER: it handed `fut` to a decode pool)."""

        def run():
            fut.started_ns = time.time_ns()  # the end of its queueing (metrics.py, tracing.py)
            try:
                result = fn()
            except Exception as e:
                self._fail(fut, e)
            else:
                if result is not SETTLED_LATER:
                    self._complete(fut, result)

        (thread or self.compute).submit(run)

    def _complete(self, fut, result) -> None:
        # Recorded before the future settles: a client that sees the sample can train on it.
        self.stability.settle(fut.request_id, result)
        if self.service_time is not None and fut.request_type == "Sample":
            self.loop.call_soon_threadsafe(self.service_time.hold, fut, result, self.futures.complete)
            return
        self.loop.call_soon_threadsafe(self.futures.complete, fut, result)

    def _fail(self, fut, e: BaseException) -> None:
        self.stability.forget(fut.request_id)
        loop = self.loop
        if isinstance(e, RequestFailed):
            loop.call_soon_threadsafe(self.futures.fail, fut, e.message, e.category)
        elif isinstance(e, EngineError):
            loop.call_soon_threadsafe(self.futures.fail, fut, e.detail, "user")
        else:  # a bug or resource problem: report it, keep serving
            log.error("request %s failed:\n%s", fut.request_id, "".join(traceback.format_exception(e)))
            loop.call_soon_threadsafe(self.futures.fail, fut, f"{type(e).__name__}: {e}", "server")

    def _enqueue(self, handle: ModelHandle, seq_id: int, job) -> None:
        handle.buffered[seq_id] = job
        while handle.next_seq in handle.buffered:
            step = handle.buffered.pop(handle.next_seq)
            handle.next_seq += 1
            if step is not None:
                step()

    def reject(self, model_id, seq_id, fingerprint: str, error: EngineError):
        """Answers `error`, consuming the request's seq id when it names a live model, so that a
        malformed request cannot leave a gap that blocks every later request of the model."""
        handle = self.models.get(model_id) if isinstance(model_id, str) else None
        if handle is not None and not self.ignore_seq_id and isinstance(seq_id, int) and seq_id >= handle.next_seq:
            if seq_id not in handle.seen and seq_id - handle.next_seq <= MAX_SEQ_LOOKAHEAD:
                handle.seen[seq_id] = SeqRecord(fingerprint, error=(error.status, error.detail))
                self._enqueue(handle, seq_id, None)
        raise error

    def submit_model_op(self, handle: ModelHandle, seq_id, fingerprint: str, request_type: str, validate, work) -> str:
        """Sequenced, deduplicated submission of one model operation; returns its request id.

        `validate()` runs now (a failure answers 4xx and still consumes the seq id, so later ids
        are not blocked); `work(trainer)` runs on the compute thread when the seq id is reached
        (with clock cycles on: at the first cycle boundary after that).
        """
        if not isinstance(seq_id, int) or seq_id < 1:
            raise bad_request(f"seq_id must be an integer >= 1, got {seq_id!r}")
        if self.ignore_seq_id:
            return self._submit_unsequenced(handle, seq_id, fingerprint, request_type, validate, work)
        record = handle.seen.get(seq_id)
        if record is not None:
            if record.fingerprint != fingerprint:
                raise conflict(
                    f"seq_id {seq_id} of model {handle.model_id} was already used by a different request"
                )
            if record.error is not None:
                raise EngineError(*record.error)
            self._redo_after_storage_failure(handle, record, work, request_type)
            return record.request_id
        if seq_id < handle.next_seq:
            raise conflict(f"seq_id {seq_id} of model {handle.model_id} was already used")
        if seq_id - handle.next_seq > MAX_SEQ_LOOKAHEAD:
            raise bad_request(f"seq_id {seq_id} is too far ahead of the next expected seq_id {handle.next_seq}")
        try:
            validate()
        except EngineError as e:
            handle.seen[seq_id] = SeqRecord(fingerprint, error=(e.status, e.detail))
            self._enqueue(handle, seq_id, None)
            raise
        request_id = f"{handle.model_id}:{seq_id}"
        fut = self.futures.create(request_id, request_type)
        record = SeqRecord(fingerprint, request_id=request_id)
        handle.seen[seq_id] = record
        handle.last_request_time = ckpt.now_iso()
        self._count_training_request(handle, seq_id, request_type)
        run = self._model_op_runner(handle, record, work)

        def release():  # called in seq order, once every earlier seq id of the model was released
            self._release(fut, run)

        self._enqueue(handle, seq_id, release)
        return request_id

    def _submit_unsequenced(self, handle: ModelHandle, seq_id: int, fingerprint: str, request_type: str, validate,
                            work) -> str:
        """--ignore-seq-id: a request is new every time it arrives (a resend runs again, under a
        request id of its own) and runs when it arrives, whatever its seq_id."""
        validate()
        request_id = f"{handle.model_id}:{seq_id}:{next(self._arrivals)}"
        fut = self.futures.create(request_id, request_type)
        handle.last_request_time = ckpt.now_iso()
        self._count_training_request(handle, seq_id, request_type)
        self._release(fut, self._model_op_runner(handle, SeqRecord(fingerprint, request_id=request_id), work))
        return request_id

    def _count_training_request(self, handle: ModelHandle, seq_id: int, request_type: str) -> None:
        if request_type in ("ForwardBackward", "OptimStep"):
            self.training_requests[handle.model_id].append({"type": request_type, "seq_id": seq_id})

    def _release(self, fut, run) -> None:
        if self.clock is None:
            self._dispatch(fut, run)
        else:
            self.clock.hold(lambda: self._dispatch(fut, run))

    def _model_op_runner(self, handle: ModelHandle, record: SeqRecord, work, redo_of: int | None = None):
        """What runs on the compute thread for one model operation. A failure for lack of disk
        space remembers the weights version it ran on (see `_redo_after_storage_failure`)."""

        def run():
            if handle.unloaded:
                raise RequestFailed(f"model {handle.model_id} was unloaded")
            trainer = handle.trainer
            if trainer is None:
                raise RequestFailed(f"model {handle.model_id} could not be created: {handle.create_error}")
            if redo_of is not None and trainer.version != redo_of:
                raise RequestFailed(
                    f"{record.request_id} failed for lack of disk space and cannot be redone: the model's weights "
                    "changed since (save them under a new seq_id)"
                )
            try:
                return work(trainer)
            except ckpt.StorageError as e:
                if e.out_of_space:
                    version = trainer.version
                    self.loop.call_soon_threadsafe(setattr, record, "redo_version", version)
                raise

        return run

    def _redo_after_storage_failure(self, handle: ModelHandle, record: SeqRecord, work, request_type: str) -> None:
        """A resend of a save that failed because the disk was full runs it again (once more per
        resend), provided the model's weights are still the ones it was to save; until then the
        resend is answered with the original failure, as any resend of a failed request. This is
        what lets a client that retries a failed save resume once space is freed."""
        fut = self.futures.get(record.request_id)
        if record.redo_version is None or (fut is not None and fut.state != FAILED):
            return
        version, record.redo_version = record.redo_version, None
        fut = self.futures.create(record.request_id, request_type)
        self._release(fut, self._model_op_runner(handle, record, work, redo_of=version))

    # ------------------------------------------------------------------------ sessions

    def create_session(self, body: Body) -> dict:
        session_id = str(uuid.uuid4())
        self.sessions[session_id] = Session(
            session_id=session_id,
            tags=body.list("tags", []),
            user_metadata=body.raw("user_metadata", {}),
            sdk_version=body.str("sdk_version", ""),
        )
        return {"type": "create_session", "session_id": session_id}

    def session(self, session_id) -> Session:
        if not isinstance(session_id, str) or session_id not in self.sessions:
            raise not_found(f"unknown session {session_id!r}")
        return self.sessions[session_id]

    def heartbeat(self, body: Body) -> dict:
        session = self.session(body.str("session_id"))
        if session.finished is not None:
            # 410 tells SDK 0.38+ to stop heartbeating for good.
            raise EngineError(410, f"session {session.session_id} is finished")
        session.last_heartbeat = time.time()
        return {"type": "session_heartbeat"}

    def finish_session(self, session_id: str, body: Body) -> dict:
        session = self.session(session_id)
        reason = body.obj("reason", None)
        kind = reason.str("type") if reason is not None else "success"
        if kind not in ("success", "errored", "interrupted"):
            raise bad_request(f"reason.type must be success, errored or interrupted, not {kind!r}")
        if session.finished is None:
            session.finished = {"reason": {"type": kind}, "detail": body.str("detail", None)}
        return {"type": "finish_session", "session_id": session.session_id, **session.finished}

    # -------------------------------------------------------------------------- models

    def model(self, model_id) -> ModelHandle:
        handle = self.models.get(model_id) if isinstance(model_id, str) else None
        if handle is None:
            raise not_found(
                f"unknown model {model_id!r} (never created, unloaded, or lost in an engine restart; "
                "recreate it from a checkpoint)"
            )
        return handle

    def create_model(self, body: Body) -> dict:
        session = self.session(body.str("session_id"))
        model_seq_id = body.int("model_seq_id", 0)
        base_model = body.str("base_model")
        lora = parse_lora(body)
        check_optimizer_config(body)
        user_metadata = body.raw("user_metadata", {})
        if not isinstance(user_metadata, dict):
            raise bad_request("user_metadata must be an object")
        fingerprint = fingerprint_json("create_model", [base_model, lora.to_json(), user_metadata])
        return self._create(session, model_seq_id, base_model, lora, user_metadata, fingerprint, "CreateModel")

    def _create(self, session: Session, model_seq_id: int, base_model: str, lora: LoraSpec, user_metadata: dict,
                fingerprint: str, request_type: str, then=None) -> dict:
        """A new model `{session}:train:{model_seq_id}` whose seq id 0 builds it (and runs `then(trainer)`:
        the create-via-load of SDK 0.38); a resend with the same payload gets the same answer."""
        model_id = f"{session.session_id}:train:{model_seq_id}"
        request_id = f"{model_id}:0"
        existing = self.models.get(model_id)
        if existing is not None:
            if existing.create_fingerprint != fingerprint:
                raise conflict(f"model_seq_id {model_seq_id} of session {session.session_id} was already used")
            return {"request_id": request_id, "model_id": model_id}
        spec = self.registry.resolve(base_model)
        handle = ModelHandle(model_id, session.session_id, spec, lora, user_metadata, fingerprint)
        self.models[model_id] = handle
        session.training_run_ids.append(model_id)
        fut = self.futures.create(request_id, request_type)
        run_meta = {
            "training_run_id": model_id,
            "base_model": base_model,
            "model_owner": "local",
            "is_lora": True,
            "lora_rank": lora.rank,
            "lora": lora.to_json(),
            "user_metadata": {str(k): str(v) for k, v in user_metadata.items()},
            "created_at": ckpt.now_iso(),
            "session_id": session.session_id,
        }

        def run():
            try:
                base = self.bases.model(spec)
                trainer = TrainingModel(base, spec, lora, self.device, self.max_batch_tokens,
                                        exact_attention_backward=self.exact_attention_backward)
                # A create-via-load whose load fails leaves no model behind: training on fresh
                # weights instead of the checkpoint's would be a silent wrong answer.
                result = then(trainer) if then is not None else {"type": "create_model", "model_id": model_id}
            except Exception as e:
                handle.create_error = f"{type(e).__name__}: {e}"
                raise
            handle.trainer = trainer
            self.store.save_run(run_meta)
            return result

        self._dispatch(fut, run)
        return {"request_id": request_id, "model_id": model_id}

    def get_info(self, body: Body) -> dict:
        handle = self.model(body.str("model_id"))
        return {
            "type": "get_info",
            "model_id": handle.model_id,
            "model_data": {
                "arch": handle.spec.arch,
                "model_name": handle.spec.name,
                "tokenizer_id": handle.spec.tokenizer_id,
            },
            "is_lora": True,
            "lora_rank": handle.lora.rank,
            "model_name": handle.spec.name,
            "optimizer_config": {"type": "adamw"},
        }

    def unload_model(self, body: Body) -> dict:
        handle = self.model(body.str("model_id"))
        handle.unloaded = True
        del self.models[handle.model_id]
        # Requests still waiting for an earlier seq id would otherwise stay pending forever.
        for seq_id, record in handle.seen.items():
            fut = self.futures.get(record.request_id) if record.request_id else None
            if fut is not None and seq_id >= handle.next_seq and fut.state == "pending":
                self.futures.fail(fut, f"model {handle.model_id} was unloaded", "user")
        handle.buffered.clear()
        fut = self.futures.create(f"{handle.model_id}:unload", "UnloadModel")

        def run():
            handle.trainer = None  # frees the adapter and optimizer state
            return {"type": "unload_model", "model_id": handle.model_id}

        self._dispatch(fut, run)
        return {"request_id": fut.request_id, "model_id": handle.model_id}

    def forward_backward(self, model_id, seq_id, req: ForwardRequest) -> dict:
        handle = self.model(model_id)
        fingerprint = req.fingerprint()
        request_type = "Forward" if req.forward_only else "ForwardBackward"

        def validate():
            # Images first: decoded, counted and checked against expected_tokens for this model, so
            # that every later check sees each datum's real length (an image counts as its tokens).
            resolve_datums(req.data, handle.spec)
            if req.loss_fn == "custom":
                if not self.custom_loss_server_side:
                    raise bad_request("loss_fn 'custom' is not served by this engine unless it runs with "
                                      "--custom-loss-server-side (SDK clients then run custom losses client-side)")
                req.custom = self._custom_loss(handle, req.loss_fn_text.get("loss_id"))
                validate_custom(req, handle.spec, req.custom)
                return
            if req.loss_fn_text:
                key = sorted(req.loss_fn_text)[0]
                raise bad_request(f"loss_fn_config.{key} must be a number for loss_fn {req.loss_fn!r}")
            # Provenance first: a StableReinforce request is refused for what it is (validate_forward)
            # only once its spans were found to name recorded sequences correctly.
            used = check_provenance(req, self.stability, handle.session_id, require=req.loss_fn == "stable_reinforce")
            validate_forward(req, handle.spec)
            if not req.forward_only:
                self.stability.touch(used)

        request_id = self.submit_model_op(
            handle,
            seq_id,
            fingerprint,
            request_type,
            validate,
            lambda trainer: trainer.forward_backward(req),
        )
        fut = self.futures.get(request_id)
        if fut is not None and all(d.chunks is None for d in req.data):  # its size, for /metrics (not a resend's)
            fut.datums, fut.tokens = len(req.data), sum(len(d.tokens) for d in req.data)
        return {"request_id": request_id, "model_id": handle.model_id}

    # ------------------------------------------------------------ server-side custom losses

    def create_custom_loss(self, body: Body) -> dict:
        if not self.custom_loss_server_side:
            raise bad_request("create_custom_loss (server-side custom losses) is not served by this engine unless it "
                              "runs with --custom-loss-server-side; SDK clients then run custom losses client-side")
        session = self.session(body.str("session_id"))
        seq = body.int("custom_loss_seq_id")
        loss = compile_loss(body, f"{session.session_id}:loss:{seq}")
        existing = self.custom_losses.get(loss.loss_id)
        if existing is not None and existing.fingerprint != loss.fingerprint:
            raise conflict(f"custom_loss_seq_id {seq} of session {session.session_id} was already used")
        self.custom_losses.setdefault(loss.loss_id, loss)
        request_id = f"{loss.loss_id}:create"
        if self.futures.get(request_id) is None:
            self.futures.complete(self.futures.create(request_id, "CreateCustomLoss"),
                                  {"loss_id": loss.loss_id, "type": "create_custom_loss"})
        return {"request_id": request_id}

    def _custom_loss(self, handle: ModelHandle, loss_id):
        if not isinstance(loss_id, str):
            raise bad_request("loss_fn 'custom' needs loss_fn_config.loss_id (a string from create_custom_loss)")
        loss = self.custom_losses.get(loss_id)
        if loss is None:
            raise bad_request(f"unknown custom loss {loss_id!r} (losses live as long as the engine runs)")
        if not loss_id.startswith(f"{handle.session_id}:loss:"):
            raise bad_request(f"custom loss {loss_id!r} belongs to another session than model {handle.model_id}")
        return loss

    def optim_step(self, body: Body) -> dict:
        handle = self.model(body.str("model_id"))
        seq_id = body.int("seq_id")
        try:
            if body.raw("optimizer_params", None) is not None and body.raw("adam_params", None) is None:
                kind = body.obj("optimizer_params").str("type", "?")
                raise bad_request(f"optimizer_params of type {kind!r} are not served by this engine ({UNDEFINED_OPTIMIZER})")
            adam = parse_adam(body)
        except EngineError as e:
            self.reject(handle.model_id, seq_id, fingerprint_json("optim_step", body.raw("adam_params")), e)
        request_id = self.submit_model_op(
            handle,
            seq_id,
            fingerprint_json("optim_step", adam),
            "OptimStep",
            lambda: None,
            lambda trainer: {"metrics": trainer.optim_step(adam) or None},
        )
        return {"request_id": request_id, "model_id": handle.model_id}

    def _checkpoint_metadata(self, handle: ModelHandle, ttl_seconds) -> dict:
        return {
            "base_model": handle.spec.name,
            "is_lora": True,
            "lora_rank": handle.lora.rank,
            "lora": handle.lora.to_json(),
            "expires_at": self.store.expires_at(ttl_seconds),
        }

    def _save(self, handle: ModelHandle, trainer: TrainingModel, kind: str, name: str, ttl, overwrite) -> dict:
        with_optimizer = kind == "weights"
        try:
            info = self.store.write(
                handle.model_id,
                kind,
                name,
                lambda d: trainer.save(d, with_optimizer),
                self._checkpoint_metadata(handle, ttl),
                overwrite,
            )
        except FileExistsError:
            raise RequestFailed(
                f"checkpoint {ckpt.tinker_path(handle.model_id, kind, name)} already exists; "
                "use another name or overwrite=true"
            ) from None
        return info

    def save_weights(self, body: Body) -> dict:
        handle = self.model(body.str("model_id"))
        seq_id = body.int("seq_id")
        name = body.str("path", None) or f"seq-{seq_id}"
        ttl = body.int("ttl_seconds", None)
        overwrite = body.bool("overwrite", False)
        fingerprint = fingerprint_json("save_weights", [name, ttl, overwrite])

        def work(trainer):
            info = self._save(handle, trainer, "weights", name, ttl, overwrite)
            return {"type": "save_weights", "path": info["tinker_path"]}

        request_id = self.submit_model_op(
            handle, seq_id, fingerprint, "SaveWeights", lambda: (ckpt.check_name(name), ckpt.check_ttl(ttl)), work
        )
        return {"request_id": request_id, "model_id": handle.model_id}

    def save_weights_for_sampler(self, body: Body) -> dict:
        handle = self.model(body.str("model_id"))
        seq_id = body.int("seq_id")
        name = body.str("path", None)
        sampling_seq = body.int("sampling_session_seq_id", None)
        ttl = body.int("ttl_seconds", None)
        overwrite = body.bool("overwrite", False)
        fingerprint = fingerprint_json("save_weights_for_sampler", [name, sampling_seq, ttl, overwrite])
        record = handle.seen.get(seq_id) if isinstance(seq_id, int) else None
        if name is None and sampling_seq is None:
            raise bad_request("save_weights_for_sampler needs either path (a name) or sampling_session_seq_id")

        if name is not None:
            def work(trainer):
                info = self._save(handle, trainer, "sampler_weights", name, ttl, overwrite)
                return {"type": "save_weights_for_sampler", "path": info["tinker_path"], "sampling_session_id": None}

            validate = lambda: (ckpt.check_name(name), ckpt.check_ttl(ttl))  # noqa: E731
        else:
            sampler_id = None if record else self._ephemeral_sampler_id(handle, sampling_seq, seq_id)

            def work(trainer):
                adapter = trainer.adapter_state()
                if self.device.type == "cuda":  # read next on the sampling thread's stream
                    torch.cuda.current_stream(self.device).synchronize()
                sampler = SamplerHandle(sampler_id, handle.session_id, handle.spec, lora=handle.lora, adapter=adapter)
                self._register_ephemeral(sampler)
                return {"type": "save_weights_for_sampler", "path": None, "sampling_session_id": sampler_id}

            validate = lambda: None  # noqa: E731

        request_id = self.submit_model_op(handle, seq_id, fingerprint, "SaveWeightsForSampler", validate, work)
        return {"request_id": request_id, "model_id": handle.model_id}

    def _ephemeral_sampler_id(self, handle: ModelHandle, sampling_seq: int, seq_id: int) -> str:
        preferred = f"{handle.session_id}:sample:{sampling_seq}"
        # A model driven by another session (e.g. after a worker restart) may reuse a counter value.
        sampler_id = preferred if preferred not in self.samplers else f"{handle.model_id}:sample:{seq_id}"
        self.samplers.setdefault(sampler_id, None)  # reserved until the save runs
        return sampler_id

    def _register_ephemeral(self, sampler: SamplerHandle) -> None:
        def register():
            self.samplers[sampler.sampler_id] = sampler
            self.ephemeral_order.append(sampler.sampler_id)
            while len(self.ephemeral_order) > MAX_EPHEMERAL_SAMPLERS:
                old = self.ephemeral_order.popleft()
                self.samplers.pop(old, None)
                self.sampler_models.pop(("ephemeral", old), None)

        # Registered before the future completes (call_soon callbacks run in order).
        self.loop.call_soon_threadsafe(register)

    def load_weights(self, body: Body) -> dict:
        if body.has("session_id") and not body.has("model_id"):
            return self._create_from_checkpoint(body)
        handle = self.model(body.str("model_id"))
        path = body.str("path")
        with_optimizer = body.bool("optimizer", False)

        def validate():
            meta = self.store.verify(path)
            if meta.get("lora_rank") != handle.lora.rank:
                raise bad_request(
                    f"checkpoint {path} has LoRA rank {meta.get('lora_rank')}, model has rank {handle.lora.rank}"
                )
            if self.registry.resolve(meta["base_model"]).name != handle.spec.name:
                raise bad_request(
                    f"checkpoint {path} is for base model {meta['base_model']!r}, model uses {handle.spec.name!r}"
                )
            if with_optimizer and meta["checkpoint_type"] != "training":
                raise bad_request(f"checkpoint {path} has no optimizer state (a sampler checkpoint)")

        def work(trainer):
            trainer.load(self.store.reader(path), with_optimizer)
            return {"type": "load_weights", "path": path, "model_id": handle.model_id}

        request_id = self.submit_model_op(
            handle,
            body.int("seq_id"),
            fingerprint_json("load_weights", [path, with_optimizer]),
            "LoadWeights",
            validate,
            work,
        )
        return {"request_id": request_id, "model_id": handle.model_id}

    def _create_from_checkpoint(self, body: Body) -> dict:
        """SDK 0.38's create-via-load: one session-addressed load_weights creates the model
        `{session}:train:{model_seq_id}` from a checkpoint (LoRA config from its metadata) as the
        model's seq id 0; training requests follow from seq id 1."""
        session = self.session(body.str("session_id"))
        model_seq_id = body.int("model_seq_id")
        path = body.str("path")
        with_optimizer = body.bool("optimizer", False)
        check_optimizer_config(body)
        if body.raw("weights_access_token", None) is not None:
            raise bad_request("weights_access_token is not served by this engine (checkpoints of other accounts)")
        user_metadata = body.raw("user_metadata", None) or {}
        if not isinstance(user_metadata, dict):
            raise bad_request("user_metadata must be an object")
        meta = self.store.verify(path)
        base_model = meta["base_model"]
        override = body.str("base_model", None)
        if override is not None and self.registry.resolve(override).name != self.registry.resolve(base_model).name:
            raise bad_request(f"base_model {override!r} is not compatible with checkpoint {path} (base model {base_model!r})")
        if with_optimizer and meta["checkpoint_type"] != "training":
            raise bad_request(f"checkpoint {path} has no optimizer state (a sampler checkpoint)")
        lora = LoraSpec(**meta["lora"])
        fingerprint = fingerprint_json("load_weights", [path, with_optimizer, user_metadata])

        def load(trainer):
            trainer.load(self.store.reader(path), with_optimizer)
            return {"type": "load_weights", "path": path, "model_id": f"{session.session_id}:train:{model_seq_id}"}

        return self._create(session, model_seq_id, base_model, lora, user_metadata, fingerprint, "LoadWeights", load)

    def weights_info(self, body: Body) -> dict:
        meta = self.store.verify(body.str("tinker_path"))
        lora = meta.get("lora", {})
        return {
            "base_model": meta["base_model"],
            "is_lora": True,
            "lora_rank": meta["lora_rank"],
            "train_unembed": lora.get("train_unembed", True),
            "train_mlp": lora.get("train_mlp", True),
            "train_attn": lora.get("train_attn", True),
        }

    # ------------------------------------------------------------------------ samplers

    def create_sampling_session(self, body: Body) -> dict:
        session = self.session(body.str("session_id"))
        seq = body.int("sampling_session_seq_id", 0)
        sampler_id = f"{session.session_id}:sample:{seq}"
        sampler = self._new_sampler(sampler_id, session.session_id, body.str("base_model", None),
                                    body.str("model_path", None))
        existing = self.samplers.get(sampler_id)
        if existing is not None or sampler_id in self.samplers:
            if existing is None or existing.fingerprint != sampler.fingerprint:
                raise conflict(f"sampling_session_seq_id {seq} of session {session.session_id} was already used")
            return {"type": "create_sampling_session", "sampling_session_id": sampler_id}
        self.samplers[sampler_id] = sampler
        session.sampler_ids.append(sampler_id)
        return {"type": "create_sampling_session", "sampling_session_id": sampler_id}

    def _new_sampler(self, sampler_id, session_id, base_model, model_path) -> SamplerHandle:
        if model_path is not None:
            meta = self.store.verify(model_path)
            lora = LoraSpec(**meta["lora"])
            spec = self.registry.resolve(meta["base_model"])
            return SamplerHandle(sampler_id, session_id, spec, model_path=model_path, lora=lora,
                                 fingerprint=f"path:{model_path}")
        if base_model is None:
            raise bad_request("create_sampling_session needs base_model or model_path")
        spec = self.registry.resolve(base_model)
        return SamplerHandle(sampler_id, session_id, spec, fingerprint=f"base:{base_model}")

    def sampler(self, sampler_id) -> SamplerHandle:
        handle = self.samplers.get(sampler_id) if isinstance(sampler_id, str) else None
        if handle is None:
            raise not_found(f"unknown sampling session {sampler_id!r}")
        return handle

    def get_sampler(self, sampler_id: str) -> dict:
        s = self.sampler(sampler_id)
        out = {"sampler_id": s.sampler_id, "base_model": s.spec.name}
        if s.model_path:
            out["model_path"] = s.model_path
        return out

    def forget_sampler_weights(self, model_path: str) -> None:
        """Drops the cached sampler model of a checkpoint path whose files were just (re)written."""
        with self._sampler_models_lock:
            self.sampler_models.pop(("path", model_path), None)

    def _sampler_model(self, sampler: SamplerHandle):
        """The module a sampler generates with (on a compute thread); adapters are cached LRU."""
        base = self.bases.model(sampler.spec)
        if sampler.lora is None:
            return base
        with self._sampler_models_lock:
            return self._sampler_model_locked(sampler, base)

    def _sampler_model_locked(self, sampler: SamplerHandle, base):
        key = ("path", sampler.model_path) if sampler.model_path else ("ephemeral", sampler.sampler_id)
        model = self.sampler_models.get(key)
        if model is None:
            if sampler.model_path:
                from safetensors.torch import load as safetensors_load

                data = self.store.reader(sampler.model_path)("adapter_model.safetensors")
                if data is None:
                    raise RequestFailed(f"checkpoint {sampler.model_path} has no adapter_model.safetensors")
                adapter = {k: v.to(self.device) for k, v in safetensors_load(data).items()}
            else:
                adapter = sampler.adapter
            model = attach_lora(instance_sharing_weights(base), sampler.lora)
            load_adapter_state(model, adapter)
            self.sampler_models[key] = model
            while len(self.sampler_models) > SAMPLER_MODEL_CACHE:
                self.sampler_models.popitem(last=False)
        else:
            self.sampler_models.move_to_end(key)
        return model

    def asample(self, body: Body) -> dict:
        sampler_id = body.str("sampling_session_id", None)
        if sampler_id is not None:
            sampler = self.sampler(sampler_id)
        else:
            # Direct addressing (SDKs before sessions): an anonymous sampler per source.
            sampler = self._new_sampler(None, None, body.str("base_model", None), body.str("model_path", None))
            sampler.sampler_id = f"direct:{sampler.fingerprint}"
            sampler = self.samplers.setdefault(sampler.sampler_id, sampler)
        chunks = parse_chunks_json(body.raw("prompt"), "prompt") if body.has("prompt") else None
        if chunks is None:
            raise bad_request("missing required field 'prompt'")
        # An image counts as its tokens from here on (context, scoring shapes, positions).
        prompt, images = resolve_chunks(chunks, sampler.spec, "prompt")
        params = parse_sampling_params(body)
        num_samples = body.int("num_samples", 1)
        want_prompt_logprobs = body.bool("prompt_logprobs", None) or False
        topk = body.int("topk_prompt_logprobs", 0)
        last_n = body.int("prompt_logprobs_last_n", None)
        if last_n is not None and (last_n < 1 or not want_prompt_logprobs):
            raise bad_request("prompt_logprobs_last_n must be >= 1 and needs prompt_logprobs: true")
        spec = sampler.spec
        eos = spec.eos_token_ids if params.stop_at_eos else ()
        if not 1 <= num_samples <= MAX_NUM_SAMPLES:
            raise bad_request(f"num_samples must be between 1 and {MAX_NUM_SAMPLES}")
        if not 0 <= topk <= MAX_TOPK_PROMPT_LOGPROBS:
            raise bad_request(f"topk_prompt_logprobs must be between 0 and {MAX_TOPK_PROMPT_LOGPROBS}")
        if len(prompt) == 0:
            raise bad_request("prompt must contain at least one token")
        if prompt.min() < 0 or prompt.max() >= spec.vocab_size:
            raise bad_request(f"prompt contains token ids outside the vocabulary [0, {spec.vocab_size})")
        if any(not 0 <= t < spec.vocab_size for t in params.stop_tokens):
            raise bad_request(f"sampling_params.stop contains token ids outside the vocabulary [0, {spec.vocab_size})")
        if len(prompt) + params.max_tokens > spec.max_context:
            raise bad_request(
                f"prompt ({len(prompt)} tokens) + max_tokens ({params.max_tokens}) exceeds the context {spec.max_context}"
            )
        extra = parse_scoring_options(body, len(prompt), spec.vocab_size)
        record_stability = body.bool("record_stability_info", None) or False
        seq_id = body.int("seq_id", None)
        fingerprint = fingerprint_json(
            "sample",
            [prompt.tolist(), vars(params), num_samples, want_prompt_logprobs, topk, last_n]
            + ([extra.fingerprint()] if extra.any else [])
            + ([{"record_stability_info": True}] if record_stability else [])
            + ([{"chunks": chunks_fingerprint(chunks)}] if images else []),
        )
        if seq_id is not None:
            record = sampler.seen.get(seq_id)
            if record is not None:
                if record.fingerprint != fingerprint:
                    raise conflict(f"seq_id {seq_id} of sampling session {sampler.sampler_id} was already used")
                return {"request_id": record.request_id, "sample_sequence_ids": sequence_ids(record.request_id, num_samples)}
            request_id = f"{sampler.sampler_id}:{seq_id}"
            sampler.seen[seq_id] = SeqRecord(fingerprint, request_id=request_id)
        else:
            request_id = f"{sampler.sampler_id}:{uuid.uuid4()}"
        fut = self.futures.create(request_id, "Sample")
        fut.datums = num_samples
        if record_stability:
            self.stability.expect(request_id, sampler.session_id, prompt)
        tokens = prompt.tolist()
        pool = self.compute.pool
        scoring = want_prompt_logprobs or topk > 0 or extra.any

        def reference():
            return keep_last_prompt_logprobs(generate(
                self._sampler_model(sampler), tokens, num_samples, params, eos,
                self.bases.tokenizer(spec), self.device, prompt_logprobs=want_prompt_logprobs, topk_prompt=topk,
                extra=extra, images=images,
            ), last_n)

        if self.fast is not None:
            # Prompts with images run on the reference path (the fast sampler has no vision tower).
            self._dispatch(fut, lambda: self._sample_fast(fut, sampler, tokens, num_samples, params,
                                                          scoring or bool(images), reference, eos), self.sampling)
            return {"request_id": request_id, "sample_sequence_ids": sequence_ids(request_id, num_samples)}

        def run():
            model = self._sampler_model(sampler)
            tokenizer = self.bases.tokenizer(spec)
            if pool is not None and not scoring and not is_vision_model(model) and pool.accepts(model):
                # Joins the decode batch; the pool settles the future when the last row stops.
                pool.admit(DecodeJob(
                    model, tokens, num_samples, params, eos, tokenizer,
                    on_done=lambda result: self._complete(fut, result), on_error=lambda e: self._fail(fut, e),
                ))
                return SETTLED_LATER
            return reference()

        self._dispatch(fut, run)
        return {"request_id": request_id, "sample_sequence_ids": sequence_ids(request_id, num_samples)}

    def _sample_fast(self, fut, sampler: SamplerHandle, tokens, num_samples, params, scoring, reference, eos):
        """On the sampling thread: queues the request on the fast path, or runs it on the reference
        path (scoring requests, and architectures the fast path does not cover)."""
        spec = sampler.spec
        base = self.bases.model(spec)
        if spec.name not in self._fast_unsupported:
            reason = unsupported_reason(base)
            self._fast_unsupported[spec.name] = reason
            if reason is not None:
                log.warning("%s samples on the reference path: %s", spec.name, reason)
        if scoring or self._fast_unsupported[spec.name] is not None:
            return reference()

        def fallback():
            try:
                self._complete(fut, reference())
            except Exception as e:
                self._fail(fut, e)

        snapshot = None if sampler.lora is None else (lambda: self._sampler_model(sampler))
        # A handle's serial names its weights for good (a reused sampler id or an overwritten path
        # gets a new handle), so a decode lane never serves stale adapters.
        key = ("base", spec.name) if sampler.lora is None else ("snapshot", sampler.serial)
        self.fast.submit(FastJob(
            key, base, snapshot, tokens, num_samples, params, eos,
            self.bases.tokenizer(spec), on_done=lambda result: self._complete(fut, result),
            on_error=lambda e: self._fail(fut, e), fallback=fallback,
        ))
        return SETTLED_LATER

    # --------------------------------------------------------------- runs/checkpoints

    def training_run(self, run_id: str) -> dict:
        meta = self.store.load_run(ckpt.check_run_id(run_id))
        if meta is None:
            raise not_found(f"unknown training run {run_id!r}")
        checkpoints = self.store.list(run_id)
        training = [c for c in checkpoints if c["checkpoint_type"] == "training"]
        sampler = [c for c in checkpoints if c["checkpoint_type"] == "sampler"]
        handle = self.models.get(run_id)
        return {
            "training_run_id": run_id,
            "base_model": meta["base_model"],
            "model_owner": meta.get("model_owner", "local"),
            "is_lora": True,
            "corrupted": False,
            "lora_rank": meta["lora_rank"],
            "last_request_time": handle.last_request_time if handle else meta["created_at"],
            "last_checkpoint": training[-1] if training else None,
            "last_sampler_checkpoint": sampler[-1] if sampler else None,
            "user_metadata": meta.get("user_metadata") or None,
        }

    def training_runs(self, limit: int, offset: int) -> dict:
        runs = self.store.list_runs()
        page = [self.training_run(r["training_run_id"]) for r in runs[offset : offset + limit]]
        return {"training_runs": page, "cursor": {"offset": offset, "limit": limit, "total_count": len(runs)}}
