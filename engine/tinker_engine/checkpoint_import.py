"""Checkpoint import: an engine extension (not part of the Tinker protocol) that stores a checkpoint
archive downloaded from another engine under the same tinker path, so that sampling from it, its
weights_info and load_weights (with or without the optimizer state) work here exactly as there.

`POST /api/v1/import_checkpoint?tinker_path=tinker://<run>/<weights|sampler_weights>/<name>`
(optional `&ttl_seconds=N`), the body the tar the archive download serves (archive.py). Answers
`200 {"tinker_path", "imported": true}` when stored, `{"tinker_path", "imported": false}` when the
path already holds these very files (a repeated import), 409 when it holds others, 400 naming what
is wrong with a request or archive, 413 over `--max-import-mb`.

What the archive must be: a plain tar whose members are regular files named exactly
`adapter_config.json`, `adapter_model.safetensors`, for a `weights` checkpoint `optimizer.safetensors`
and `optimizer.json`, optionally `tinker_engine_checkpoint.json` (the engine's own metadata), and
`checkpoint_complete` — nothing else: no folders, links, devices, paths. The LoRA spec and base model
are read from `tinker_engine_checkpoint.json` when present, else reconstructed from the PEFT files:
the base model from `base_model_name_or_path`, the rank from `r`, train_attn/train_mlp/train_unembed
from which layers the adapter holds (matched against the base model's layers). Only what cannot be
reconstructed is defaulted: the LoRA seed (which only initialises adapters that a load then
overwrites: it changes nothing that is sampled or trained) and the save time (the import's). Every
tensor's name and shape is checked against the base model before anything is stored, so a later
load cannot fail for a mismatch.

The upload is streamed to a file under the data dir (`.imports/`), unpacked and checked there, and
committed by one rename (checkpoints.py `commit_import`); a failure leaves nothing behind.
"""

import asyncio
import itertools
import json
import logging
import math
import re
import shutil
import tarfile
from pathlib import Path

import torch
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from . import checkpoints as ckpt
from .errors import EngineError, bad_request
from .lora import LORA_ALPHA, LoraSpec, target_modules

log = logging.getLogger("tinker_engine")

IMPORT_ROUTE = "/import_checkpoint"
DEFAULT_MAX_IMPORT_MB = 4096
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER = "adapter_model.safetensors"
OPTIMIZER = "optimizer.safetensors"
OPTIMIZER_STEPS = "optimizer.json"
PAYLOAD = {"sampler_weights": (ADAPTER_CONFIG, ADAPTER), "weights": (ADAPTER_CONFIG, ADAPTER, OPTIMIZER, OPTIMIZER_STEPS)}
SMALL_MEMBER_BYTES = {ADAPTER_CONFIG: 16 << 20, OPTIMIZER_STEPS: 64 << 20, ckpt.ARCHIVE_METADATA_FILE: 1 << 20,
                      ckpt.MARKER_FILE: 1 << 20}
FLOAT_DTYPES = {"F32", "F16", "BF16", "F64"}
_KEY_RE = re.compile(r"^base_model\.model\.(.+)\.lora_([AB])\.weight$")
_CHUNK = 1 << 20
_WRITE_BATCH = 4 << 20
# train_attn, train_mlp, train_unembed: the engine's default (all) first, when several fit.
FLAG_COMBINATIONS = [f for f in itertools.product((True, False), repeat=3) if any(f)]


def _json(status: int, data: dict) -> Response:
    return Response(json.dumps(data), status_code=status, media_type="application/json")


def model_layout(model: torch.nn.Module) -> dict:
    """The Linear layers a LoRA can target: name → (in, out), and the layers every combination of
    train_attn/train_mlp/train_unembed targets (lora.target_modules, exactly as a model gets them)."""
    modules = {n: (m.in_features, m.out_features) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    targets = {}
    for flags in FLAG_COMBINATIONS:
        spec = LoraSpec(rank=1, train_attn=flags[0], train_mlp=flags[1], train_unembed=flags[2])
        targets[flags] = frozenset(target_modules(model, spec))
    return {"modules": modules, "targets": targets}


def skeleton_layout(spec, bases) -> dict:
    """model_layout of a base model built on the meta device (no memory, no weights read); the
    loaded base model where that fails. Runs on the training compute thread: building a model
    touches process-wide torch state (the default dtype) that training must not see change."""
    from .base_models import model_class

    try:
        with torch.device("meta"):
            model = model_class(spec.config).from_config(spec.config, attn_implementation="sdpa", dtype=torch.float32)
    except Exception as e:  # noqa: BLE001 — an architecture that cannot be built on meta: the real one
        log.info("building %s on the meta device failed (%s: %s); using the loaded base model", spec.name,
                 type(e).__name__, e)
        model = bases.model(spec)
    return model_layout(model)


def expected_adapter(layout: dict, modules, rank: int) -> dict:
    """PEFT state-dict key → shape of a LoRA of `rank` on `modules` (what lora.adapter_state saves)."""
    out = {}
    for m in modules:
        fan_in, fan_out = layout["modules"][m]
        out[f"base_model.model.{m}.lora_A.weight"] = (rank, fan_in)
        out[f"base_model.model.{m}.lora_B.weight"] = (fan_out, rank)
    return out


def expected_params(layout: dict, modules, rank: int) -> dict:
    """Trainable parameter name (as the optimizer state names them) → shape."""
    return {k.replace(".lora_A.weight", ".lora_A.default.weight").replace(".lora_B.weight", ".lora_B.default.weight"): v
            for k, v in expected_adapter(layout, modules, rank).items()}


# ------------------------------------------------------------------------------ unpacking


def unpack(upload: Path, dest: Path, kind: str, max_bytes: int) -> tuple:
    """Extracts the members of the uploaded tar into `dest` (a new folder), refusing anything but
    the expected regular files; returns ({payload name: {"size", "sha256"}}, names of every member)."""
    import hashlib

    allowed = set(PAYLOAD[kind]) | {ckpt.ARCHIVE_METADATA_FILE, ckpt.MARKER_FILE}
    listed = ", ".join(sorted(allowed))
    dest.mkdir()
    files, seen, total = {}, set(), 0
    # Whatever the tar reader raises about the bytes it is given is the archive's fault (a 400); only
    # the writes below are the engine's (OSError: 507/500).
    try:
        tar = tarfile.open(upload, mode="r:")
    except Exception as e:  # noqa: BLE001
        raise bad_request(f"the body is not a readable (uncompressed) tar archive: {e}") from None
    with tar:
        while True:
            try:
                member = tar.next()
            except Exception as e:  # noqa: BLE001
                raise bad_request(f"the tar archive is malformed or truncated after {sorted(seen)}: {e}") from None
            if member is None:
                break
            name = member.name
            if name not in allowed:
                raise bad_request(f"unexpected member {name[:200]!r} in the archive: a {kind} checkpoint archive holds "
                                  f"only {listed}")
            if name in seen:
                raise bad_request(f"member {name!r} appears twice in the archive")
            if not member.isreg():
                raise bad_request(f"member {name!r} is not a regular file (links, folders and devices are refused)")
            limit = SMALL_MEMBER_BYTES.get(name)
            if limit is not None and member.size > limit:
                raise bad_request(f"member {name!r} is {member.size} bytes, more than the {limit} allowed")
            total += member.size
            if total > max_bytes:
                raise EngineError(413, f"the archive's files add up to more than {max_bytes} bytes (--max-import-mb)")
            seen.add(name)
            digest, size = hashlib.sha256(), 0
            try:
                src = tar.extractfile(member)
            except Exception as e:  # noqa: BLE001
                raise bad_request(f"member {name!r} cannot be read: {e}") from None
            with src, open(dest / name, "xb") as out:
                while True:
                    try:
                        chunk = src.read(_CHUNK)
                    except Exception as e:  # noqa: BLE001
                        raise bad_request(f"member {name!r} is truncated: {e}") from None
                    if not chunk:
                        break
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
            if size != member.size:
                raise bad_request(f"member {name!r} is truncated: {size} of {member.size} bytes")
            if name in PAYLOAD[kind]:
                files[name] = {"size": size, "sha256": digest.hexdigest()}
    missing = [n for n in PAYLOAD[kind] + (ckpt.MARKER_FILE,) if n not in seen]
    if missing:
        why = " (the archive is incomplete: it is written last)" if missing == [ckpt.MARKER_FILE] else ""
        raise bad_request(f"the archive has no {', '.join(missing)}{why}: a {kind} checkpoint archive holds "
                          f"{', '.join(PAYLOAD[kind] + (ckpt.MARKER_FILE,))}")
    return files, seen


def _read_json(file: Path, what: str):
    try:
        data = json.loads(file.read_bytes())
    except RecursionError:
        raise bad_request(f"{what} is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise bad_request(f"{what} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise bad_request(f"{what} is not a JSON object")
    return data


def tensor_headers(file: Path, name: str) -> dict:
    """name → (dtype, shape) of a safetensors file, read from its header (which safetensors checks
    against the file's size: a file cut short is refused here)."""
    from safetensors import safe_open

    try:
        with safe_open(str(file), framework="pt") as f:
            out = {}
            for key in f.keys():
                s = f.get_slice(key)
                out[key] = (s.get_dtype(), tuple(s.get_shape()))
            return out
    except Exception as e:  # noqa: BLE001 — any complaint of the parser about bytes that are not the format
        raise bad_request(f"{name} is not a readable safetensors file: {type(e).__name__}: {e}") from None


def read_archive_metadata(directory: Path) -> dict | None:
    file = directory / ckpt.ARCHIVE_METADATA_FILE
    if not file.is_file():
        return None
    data = _read_json(file, ckpt.ARCHIVE_METADATA_FILE)
    if data.get("format") != 1:
        raise bad_request(f"{ckpt.ARCHIVE_METADATA_FILE} has format {data.get('format')!r}; this engine reads format 1")
    return data


def lora_from_metadata(data: dict) -> LoraSpec:
    raw = data.get("lora")
    what = f"{ckpt.ARCHIVE_METADATA_FILE}: lora"
    if not isinstance(raw, dict):
        raise bad_request(f"{what} must be an object")
    if set(raw) - set(LoraSpec.__dataclass_fields__):
        raise bad_request(f"{what} has unknown fields {sorted(set(raw) - set(LoraSpec.__dataclass_fields__))}")
    for key in ("rank", "seed"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or abs(value) >= 1 << 63):
            raise bad_request(f"{what}.{key} must be an integer")
    for key in ("train_attn", "train_mlp", "train_unembed"):
        if key in raw and not isinstance(raw[key], bool):
            raise bad_request(f"{what}.{key} must be true or false")
    return LoraSpec(**raw)


def base_model_name(config: dict, meta: dict | None) -> str:
    from_config = config.get("base_model_name_or_path")
    name = meta.get("base_model") if meta is not None else from_config
    if not isinstance(name, str) or not name:
        raise bad_request(f"the archive does not name its base model ({ADAPTER_CONFIG} has no base_model_name_or_path)")
    if meta is not None and isinstance(from_config, str) and from_config != name:
        raise bad_request(f"{ckpt.ARCHIVE_METADATA_FILE} names base model {name!r}, {ADAPTER_CONFIG} {from_config!r}")
    return name


def check_adapter_config(config: dict) -> int:
    """The rank; refuses what this engine would compute differently (another alpha, DoRA, rsLoRA…)."""
    peft_type = config.get("peft_type", "LORA")
    if peft_type != "LORA":
        raise bad_request(f"{ADAPTER_CONFIG}: peft_type {peft_type!r} is not served (LoRA adapters only)")
    rank = config.get("r")
    if not isinstance(rank, int) or isinstance(rank, bool) or not 1 <= rank <= 4096:
        raise bad_request(f"{ADAPTER_CONFIG}: r must be an integer between 1 and 4096, got {rank!r}")
    alpha = config.get("lora_alpha")
    if alpha != LORA_ALPHA:
        raise bad_request(f"{ADAPTER_CONFIG}: lora_alpha {alpha!r}; this engine's adapters use lora_alpha "
                          f"{LORA_ALPHA} (another would scale the adapter differently)")
    for key in ("use_dora", "use_rslora", "alpha_pattern", "rank_pattern", "layers_to_transform", "modules_to_save"):
        if config.get(key):
            raise bad_request(f"{ADAPTER_CONFIG}: {key} {config[key]!r} is not served by this engine")
    if config.get("bias", "none") != "none":
        raise bad_request(f"{ADAPTER_CONFIG}: bias {config['bias']!r} is not served (bias 'none' only)")
    return rank


def derive_lora(layout: dict, tensors: dict, rank: int, base_model: str, given: LoraSpec | None) -> LoraSpec:
    """The LoRA spec whose adapter has exactly these tensors, in these shapes, on this base model."""
    modules = set()
    for key, (dtype, _shape) in tensors.items():
        match = _KEY_RE.match(key)
        if match is None or match.group(1) not in layout["modules"]:
            raise bad_request(f"{ADAPTER}: tensor {key[:200]!r} is not a LoRA weight of a layer of {base_model!r}")
        if dtype not in FLOAT_DTYPES:
            raise bad_request(f"{ADAPTER}: tensor {key!r} has dtype {dtype}; adapters are floating point")
        modules.add(match.group(1))
    if given is not None:
        flags = (given.train_attn, given.train_mlp, given.train_unembed)
        if flags not in layout["targets"]:
            raise bad_request(f"{ckpt.ARCHIVE_METADATA_FILE}: at least one of train_attn, train_mlp, train_unembed must be true")
        if given.rank != rank:
            raise bad_request(f"{ckpt.ARCHIVE_METADATA_FILE} says rank {given.rank}, {ADAPTER_CONFIG} r {rank}")
        candidates = [flags]
    else:
        candidates = FLAG_COMBINATIONS
    for flags in candidates:
        if layout["targets"][flags] == modules:
            break
    else:
        what = "the LoRA spec its metadata names" if given is not None else "any choice of train_attn, train_mlp, train_unembed"
        raise bad_request(f"{ADAPTER}: the adapter's layers ({len(modules)}) are not those {what} gives "
                          f"base model {base_model!r}")
    expected = expected_adapter(layout, modules, rank)
    for key, (_dtype, shape) in tensors.items():
        if shape != expected[key]:
            raise bad_request(f"{ADAPTER}: tensor {key!r} has shape {list(shape)}, a rank-{rank} LoRA of "
                              f"{base_model!r} has {list(expected[key])}")
    missing = sorted(set(expected) - set(tensors))
    if missing:
        raise bad_request(f"{ADAPTER}: missing tensors {missing[:3]}")
    seed = given.seed if given is not None else 0
    return LoraSpec(rank=rank, seed=seed, train_attn=flags[0], train_mlp=flags[1], train_unembed=flags[2])


def check_optimizer(directory: Path, layout: dict, lora: LoraSpec) -> None:
    """The optimizer state must name only this LoRA's parameters, each with both moments in its shape."""
    modules = layout["targets"][(lora.train_attn, lora.train_mlp, lora.train_unembed)]
    params = expected_params(layout, modules, lora.rank)
    steps = _read_json(directory / OPTIMIZER_STEPS, OPTIMIZER_STEPS).get("steps")
    if not isinstance(steps, dict):
        raise bad_request(f"{OPTIMIZER_STEPS} has no object 'steps'")
    tensors = tensor_headers(directory / OPTIMIZER, OPTIMIZER)
    wanted = set()
    for name, step in steps.items():
        if name not in params:
            raise bad_request(f"{OPTIMIZER_STEPS} names {name[:200]!r}, not a parameter of this LoRA")
        if not isinstance(step, (int, float)) or isinstance(step, bool) or not math.isfinite(step) or step < 0:
            raise bad_request(f"{OPTIMIZER_STEPS}: the step of {name!r} must be a finite number >= 0")
        for moment in ("exp_avg", "exp_avg_sq"):
            key = f"{name}::{moment}"
            got = tensors.get(key)
            if got is None:
                raise bad_request(f"{OPTIMIZER} has no {key!r}")
            if got[0] not in FLOAT_DTYPES or got[1] != params[name]:
                raise bad_request(f"{OPTIMIZER}: {key!r} is {got[0]} {list(got[1])}, the parameter is {list(params[name])}")
            wanted.add(key)
    extra = sorted(set(tensors) - wanted)
    if extra:
        raise bad_request(f"{OPTIMIZER} holds tensors no step in {OPTIMIZER_STEPS} names: {extra[:3]}")


def saved_time(meta: dict | None) -> str | None:
    """The save time the archive records (None: absent or unreadable, and the import's time is used)."""
    try:
        when = ckpt.parse_iso(meta.get("time")) if meta is not None else None
        return ckpt.iso(when) if when is not None else None
    except (ValueError, OverflowError):
        return None


# ------------------------------------------------------------------------------- the route


def _storage_failure(store, path: str, e: OSError) -> EngineError:
    error = ckpt.storage_error(f"the import of {path}", store.root, e)
    return EngineError(507 if error.out_of_space else 500, error.message)


async def _drain(request: Request) -> None:
    """Reads and discards the rest of a request's body (the size limit still applies)."""
    try:
        async for _ in request.stream():
            pass
    except ClientDisconnect:
        pass


class CheckpointImports:
    def __init__(self, engine, api_prefix: str, max_bytes: int):
        self.engine = engine
        self.api = api_prefix
        self.max_bytes = max_bytes
        self._layouts: dict = {}  # base model key → model_layout (computed once, on the compute thread)

    async def _layout(self, spec) -> dict:
        key = spec.checkpoint_dir or spec.name.split(":peft:")[0]
        layout = self._layouts.get(key)
        if layout is None:
            loop = asyncio.get_running_loop()
            done = loop.create_future()

            def work():
                try:
                    result = skeleton_layout(spec, self.engine.bases)
                except BaseException as e:  # noqa: BLE001 — handed to the waiting request
                    loop.call_soon_threadsafe(lambda: done.done() or done.set_exception(e))
                else:
                    loop.call_soon_threadsafe(lambda: done.done() or done.set_result(result))

            self.engine.compute.submit(work)
            layout = self._layouts.setdefault(key, await done)
        return layout

    def add_routes(self, app) -> None:
        @app.post(self.api + "/import_checkpoint")
        async def import_checkpoint(request: Request):
            store = self.engine.store
            try:
                path, ttl = self._parse_request(request)
                try:
                    work = await asyncio.to_thread(store.import_workdir)
                except OSError as e:
                    raise _storage_failure(store, path, e) from None
            except EngineError:
                await _drain(request)  # answered once the upload is read: a reset connection tells the client nothing
                raise
            run_id, kind, name = ckpt.parse_tinker_path(path)
            try:
                try:
                    await self._receive(request, work / "upload.tar")
                except ClientDisconnect:
                    return _json(400, {"detail": "the client disconnected before the archive was received"})
                staged = work / "checkpoint"
                files, _ = await asyncio.to_thread(unpack, work / "upload.tar", staged, kind, self.max_bytes)
                config = await asyncio.to_thread(_read_json, staged / ADAPTER_CONFIG, ADAPTER_CONFIG)
                meta = await asyncio.to_thread(read_archive_metadata, staged)
                rank = check_adapter_config(config)
                base_model = base_model_name(config, meta)
                given = lora_from_metadata(meta) if meta is not None else None
                if meta is not None and meta.get("checkpoint_type") not in (None, ckpt.KINDS[kind]):
                    raise bad_request(f"the archive is of a {str(meta['checkpoint_type'])[:40]!r} checkpoint; {path} "
                                      f"names a {ckpt.KINDS[kind]!r} one")
                spec = await asyncio.to_thread(self.engine.registry.resolve, base_model)  # 400 naming it if unknown
                layout = await self._layout(spec)
                tensors = await asyncio.to_thread(tensor_headers, staged / ADAPTER, ADAPTER)
                lora = derive_lora(layout, tensors, rank, base_model, given)
                if given is None:  # the seed is not in the PEFT files: the run's, if this engine knows it
                    run = await asyncio.to_thread(store.load_run, run_id) or {}
                    seed = run["lora"].get("seed") if isinstance(run.get("lora"), dict) else None
                    if isinstance(seed, int) and not isinstance(seed, bool):
                        lora = LoraSpec(**{**lora.to_json(), "seed": seed})
                if kind == "weights":
                    await asyncio.to_thread(check_optimizer, staged, layout, lora)
                for extra in (ckpt.ARCHIVE_METADATA_FILE, ckpt.MARKER_FILE):  # not payload: the store writes its own
                    (staged / extra).unlink(missing_ok=True)
                now = ckpt.iso(store.now())
                when = saved_time(meta)
                metadata = {
                    "base_model": base_model,
                    "is_lora": True,
                    "lora_rank": lora.rank,
                    "lora": lora.to_json(),
                    "expires_at": store.expires_at(ttl),
                    "imported_at": now,
                }
                run_record = {
                    "training_run_id": run_id,
                    "base_model": base_model,
                    "model_owner": "local",
                    "is_lora": True,
                    "lora_rank": lora.rank,
                    "lora": lora.to_json(),
                    "user_metadata": {},
                    "created_at": when or now,
                    "session_id": None,
                    "imported": True,
                }
                imported = await asyncio.to_thread(store.commit_import, run_id, kind, name, staged, files, metadata,
                                                   when, run_record)
            except ckpt.StorageError as e:
                raise EngineError(507 if e.out_of_space else 500, e.message) from None
            except OSError as e:
                raise _storage_failure(store, path, e) from None
            finally:
                await asyncio.to_thread(shutil.rmtree, work, True)
            if imported:
                self.engine.forget_sampler_weights(path)
                log.info("imported checkpoint %s (%d bytes)", path, sum(f["size"] for f in files.values()))
            return _json(200, {"tinker_path": path, "imported": imported})

    @staticmethod
    def _parse_request(request: Request) -> tuple:
        """(tinker path, ttl_seconds or None) from the query; 400 naming what is wrong."""
        query = request.query_params
        paths = query.getlist("tinker_path")
        if len(paths) != 1 or not paths[0]:
            raise bad_request("import_checkpoint needs exactly one query parameter "
                              "tinker_path=tinker://<run>/<weights|sampler_weights>/<name>")
        path = ckpt.tinker_path(*ckpt.parse_tinker_path(paths[0]))
        ttl = None
        raw_ttl = query.get("ttl_seconds")
        if raw_ttl not in (None, "", "null"):
            try:
                ttl = int(raw_ttl)
            except ValueError:
                raise bad_request(f"ttl_seconds must be an integer, got {raw_ttl[:40]!r}") from None
            ckpt.check_ttl(ttl)
        if request.headers.get("content-encoding", "identity") not in ("", "identity"):
            raise bad_request("import_checkpoint takes the tar as it is (no Content-Encoding)")
        return path, ttl

    async def _receive(self, request: Request, file: Path) -> int:
        """Streams the body to `file` (the size cap is the guard's: GuardMiddleware)."""
        size = 0
        batch = bytearray()
        with open(file, "wb") as out:
            async for chunk in request.stream():
                batch += chunk
                size += len(chunk)
                if len(batch) >= _WRITE_BATCH:
                    await asyncio.to_thread(out.write, bytes(batch))
                    batch.clear()
            if batch:
                await asyncio.to_thread(out.write, bytes(batch))
        return size
