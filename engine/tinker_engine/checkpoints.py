"""Checkpoint storage under the data dir, addressed by tinker paths.

Layout: <data>/runs/<run_id>/run.json and <data>/runs/<run_id>/<kind>/<name>/ where kind is
`weights` (adapter + optimizer) or `sampler_weights` (adapter only). Every directory is written
under a temporary name, fsynced and renamed into place, so a crash never leaves a partial
checkpoint behind a valid name.

Damage on disk is detected: `checkpoint.json` records the size and sha256 of every payload file
(`files`) and a sha256 of its own content (`checksum`, also in run.json). A checkpoint whose
files no longer match is refused with a 422 naming the file, never loaded; checkpoints written
before checksums existed (no `files`) are loaded as they are. A full disk fails the save with a
message naming ENOSPC and leaves every committed checkpoint as it was.

Checkpoints saved with a TTL expire as on the hosted service: once `expires_at` has passed, a
checkpoint is no longer listed, loading it is refused with a 404 naming the path and when it
expired, and its files are deleted (by the sweep at startup, the periodic sweep of the server, or
on first access, whichever comes first). A small tombstone (`<kind>/.expired-<name>.json`) keeps
"expired" distinguishable from "never existed" after the files are gone; saving under the same
name again clears it. The store's clock (`now`) is injectable, so tests move time instead of
sleeping.
"""

import contextlib
import datetime as dt
import errno
import hashlib
import json
import logging
import os
import re
import shutil
import threading
import uuid
from pathlib import Path

from .errors import EngineError, RequestFailed, bad_request, conflict, not_found

log = logging.getLogger("tinker_engine")

KINDS = {"weights": "training", "sampler_weights": "sampler"}
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,199}$")
_RUN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,299}$")
METADATA_FILE = "checkpoint.json"
MARKER_FILE = "checkpoint_complete"
# In archives only (archive.py): what the engine's metadata holds that the PEFT files do not (the
# LoRA seed, the save time), so that an import (checkpoint_import.py) records exactly the same.
ARCHIVE_METADATA_FILE = "tinker_engine_checkpoint.json"
# Under the data dir: uploads being imported (same filesystem as runs/, so a commit is a rename).
IMPORTS_DIR = ".imports"
CHECKSUM_KEY = "checksum"
MAX_TTL_SECONDS = 100 * 365 * 24 * 3600
DEFAULT_SWEEP_SECONDS = 60.0
_HASH_CHUNK = 1 << 20


class CheckpointDamaged(EngineError):
    """A checkpoint (or run record) whose bytes on disk are not what was written: 422, naming the file."""

    def __init__(self, what: str, file: Path, reason: str):
        super().__init__(422, f"{what} is damaged: {file}: {reason}; it was not loaded")
        self.file = file


class CheckpointExpired(EngineError):
    """A checkpoint whose TTL ran out: 404 (as an unknown path: nothing of it is left to load), saying
    so. Not 410, which clients read as an expired *future* that may be resubmitted."""

    def __init__(self, path: str, expired_at: str | None):
        when = f" at {expired_at}" if expired_at else ""
        super().__init__(404, f"checkpoint {path} expired{when} (its ttl_seconds ran out) and was deleted; "
                              "save a new one, or extend a live checkpoint's TTL with PUT .../ttl before it expires")
        self.path = path


class StorageError(RequestFailed):
    """A write the filesystem refused (a full disk, above all); the save can be retried once the
    cause is gone. `category` "server": a condition of the engine's machine, not of the request."""

    def __init__(self, message: str, out_of_space: bool):
        super().__init__(message, "server")
        self.out_of_space = out_of_space


def is_out_of_space(e: BaseException) -> bool:
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    # safetensors reports I/O errors as SafetensorError("... No space left on device (os error 28)").
    text = str(e)
    return "No space left on device" in text or "os error 28" in text or "Disk quota exceeded" in text


def storage_error(what: str, where: Path, e: BaseException) -> StorageError:
    if is_out_of_space(e):
        return StorageError(f"could not write {what}: no space left on device (ENOSPC) under {where}; "
                            "nothing was written and committed checkpoints are intact; retry once space is freed",
                            out_of_space=True)
    code = errno.errorcode.get(getattr(e, "errno", None) or -1, type(e).__name__)
    return StorageError(f"could not write {what} under {where}: {code}: {e}", out_of_space=False)


def content_checksum(data: dict) -> str:
    """sha256 of a record's content without its own checksum field (key order and spacing aside)."""
    body = {k: v for k, v in data.items() if k != CHECKSUM_KEY}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def with_checksum(data: dict) -> dict:
    return {**{k: v for k, v in data.items() if k != CHECKSUM_KEY}, CHECKSUM_KEY: content_checksum(data)}


def read_record(file: Path, what: str) -> dict:
    """A JSON record written by this store, checked against its recorded checksum."""
    try:
        data = json.loads(file.read_bytes())
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointDamaged(what, file, f"not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise CheckpointDamaged(what, file, "not a JSON object")
    recorded = data.get(CHECKSUM_KEY)
    if recorded is not None and recorded != content_checksum(data):
        raise CheckpointDamaged(what, file, "its content does not match the checksum recorded when it was written")
    return data


def file_digest(file: Path) -> tuple:
    """(size, sha256 hex) of a file's bytes."""
    h = hashlib.sha256()
    size = 0
    with open(file, "rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def iso(when: dt.datetime) -> str:
    return when.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def now_iso() -> str:
    return iso(utc_now())


def parse_iso(text) -> dt.datetime | None:
    """An `expires_at` as written by this store (or by hand: any ISO 8601 with a zone); None if absent
    or unreadable (an unreadable expiry never deletes anything)."""
    if not isinstance(text, str):
        return None
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)


def check_name(name: str, what: str = "checkpoint name") -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise bad_request(f"invalid {what} {name!r}: use letters, digits, '.', '_' or '-' (no '/')")
    return name


def check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not _RUN_RE.match(run_id):
        raise bad_request(f"invalid training run id {run_id!r}")
    return run_id


def parse_tinker_path(path: str) -> tuple:
    """tinker://<run_id>/<kind>/<name> → (run_id, kind, name)."""
    if not isinstance(path, str) or not path.startswith("tinker://"):
        raise bad_request(f"invalid tinker path {path!r}: expected tinker://<run>/<weights|sampler_weights>/<name>")
    parts = path[len("tinker://") :].split("/")
    if len(parts) != 3 or parts[1] not in KINDS:
        raise bad_request(f"invalid tinker path {path!r}: expected tinker://<run>/<weights|sampler_weights>/<name>")
    run_id, kind, name = parts
    return check_run_id(run_id), kind, check_name(name)


def tinker_path(run_id: str, kind: str, name: str) -> str:
    return f"tinker://{run_id}/{kind}/{name}"


def _fsync_tree(directory: Path) -> None:
    for root, _, files in os.walk(directory):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rename_into_place(staged: Path, final: Path, tag: str) -> None:
    """Puts the folder `staged` at `final` by one rename; a folder already there is moved aside first
    (to `.trash-<tag>-…`, removed afterwards), so readers see the old checkpoint or the new one."""
    if final.exists():
        trash = final.parent / f".trash-{tag}-{uuid.uuid4().hex}"
        os.rename(final, trash)
        os.rename(staged, final)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.rename(staged, final)
    _fsync_dir(final.parent)


def _write_json_atomic(path: Path, data: dict) -> None:
    """Temp file, fsync, rename: readers see the old record or the new one, never a part."""
    tmp = path.with_name(f".tmp-{path.name}-{uuid.uuid4().hex}")
    try:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=2)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


class CheckpointStore:
    def __init__(self, root: Path, now=utc_now, sweep_seconds: float = DEFAULT_SWEEP_SECONDS):
        self.root = Path(root)
        self.runs = self.root / "runs"
        self.runs.mkdir(parents=True, exist_ok=True)
        self.now = now  # () -> aware datetime: the clock TTLs are measured on
        self.sweep_seconds = sweep_seconds  # the server's periodic sweep of expired checkpoints (0: off)
        # Files whose sha256 matched, by (path, inode, size, mtime): verified again only when changed.
        self._verified: dict = {}
        self._verified_lock = threading.Lock()
        # Expiry's re-check-and-delete and a save's commit of the same name never interleave (the
        # sweep runs on its own thread): a checkpoint saved again is never deleted as its expired predecessor.
        self._commit_lock = threading.RLock()
        self.recover()
        self.sweep_expired()

    def expires_at(self, ttl_seconds):
        """`expires_at` of a checkpoint saved now with `ttl_seconds` (None: never)."""
        if ttl_seconds is None:
            return None
        return iso(self.now() + dt.timedelta(seconds=int(ttl_seconds)))

    def is_expired(self, meta: dict) -> bool:
        when = parse_iso(meta.get("expires_at"))
        return when is not None and when <= self.now()

    # ---------------------------------------------------------------------------- runs

    def run_dir(self, run_id: str) -> Path:
        return self.runs / check_run_id(run_id)

    def save_run(self, meta: dict) -> None:
        d = self.run_dir(meta["training_run_id"])
        try:
            d.mkdir(parents=True, exist_ok=True)
            _write_json_atomic(d / "run.json", with_checksum(meta))
        except OSError as e:
            raise storage_error(f"training run record {d / 'run.json'}", self.root, e) from None

    def load_run(self, run_id: str):
        path = self.run_dir(run_id) / "run.json"
        if not path.is_file():
            return None
        record = read_record(path, f"training run record of {run_id!r}")
        record.pop(CHECKSUM_KEY, None)
        return record

    def list_runs(self) -> list:
        runs = []
        for d in sorted(self.runs.iterdir()):
            if (d / "run.json").is_file():
                try:
                    runs.append(self.load_run(d.name))
                except EngineError as e:  # damaged or foreign: listed by nobody, reported in the log
                    log.warning("skipping training run %s: %s", d.name, e.detail)
        return sorted(runs, key=lambda r: r.get("created_at", ""), reverse=True)

    # --------------------------------------------------------------------- checkpoints

    def checkpoint_dir(self, run_id: str, kind: str, name: str) -> Path:
        return self.run_dir(run_id) / kind / check_name(name)

    def exists(self, run_id: str, kind: str, name: str) -> bool:
        return (self.checkpoint_dir(run_id, kind, name) / METADATA_FILE).is_file()

    def write(self, run_id: str, kind: str, name: str, fill, metadata: dict, overwrite: bool) -> dict:
        """Creates the checkpoint atomically: `fill(tmp_dir)` writes the payload files; their sizes
        and sha256 go into checkpoint.json, written last, with a checksum of its own."""
        final = self.checkpoint_dir(run_id, kind, name)
        path = tinker_path(run_id, kind, name)
        tmp = final.parent / f".tmp-{name}-{uuid.uuid4().hex}"
        locked = False
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp.mkdir()
            fill(tmp)
            files = {}
            for f in sorted(tmp.iterdir()):
                if f.is_file():
                    size, digest = file_digest(f)
                    files[f.name] = {"size": size, "sha256": digest}
            info = {
                **metadata,
                "checkpoint_id": f"{kind}/{name}",
                "checkpoint_type": KINDS[kind],
                "tinker_path": path,
                "training_run_id": run_id,
                "time": iso(self.now()),
                "size_bytes": sum(f["size"] for f in files.values()),
                "public": False,
                "files": files,
            }
            (tmp / METADATA_FILE).write_text(json.dumps(with_checksum(info), indent=2))
            # An empty marker, as in the hosted service's checkpoint archives.
            (tmp / MARKER_FILE).write_text("")
            _fsync_tree(tmp)
            self._commit_lock.acquire()
            locked = True
            if final.exists() and not overwrite:
                raise FileExistsError(path)
            _rename_into_place(tmp, final, name)
            self._tombstone(run_id, kind, name).unlink(missing_ok=True)  # the name holds a live checkpoint again
        except FileExistsError:
            raise
        except Exception as e:
            if not (isinstance(e, OSError) or is_out_of_space(e)):
                raise
            error = storage_error(f"checkpoint {path}", self.root, e)
            log.warning("%s", error.message)
            raise error from None
        finally:
            if locked:
                self._commit_lock.release()
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        for file_name, record in files.items():  # just hashed: no need to read them again to load
            self._remember(final / file_name, record)
        return info

    # ------------------------------------------------------------------------- imports

    def import_workdir(self) -> Path:
        """A fresh folder for one import's upload and staged files (removed by the caller; leftovers
        of a crash are removed at startup)."""
        d = self.root / IMPORTS_DIR / uuid.uuid4().hex
        d.mkdir(parents=True)
        return d

    def commit_import(self, run_id: str, kind: str, name: str, staged: Path, files: dict, metadata: dict,
                      when: str | None, run_record: dict) -> bool:
        """Commits a checkpoint imported from another engine: `staged` (a folder under the data dir
        holding exactly the payload `files`, whose size and sha256 are given) becomes checkpoint
        `tinker://run_id/kind/name`, with the same metadata a save records. Returns False, changing
        nothing, when that path already holds these very files; a 409 when it holds others, or when
        the run's record on this engine names another base model or LoRA spec. The run's record is
        written first when the run is new here, so the checkpoint is listed under its run."""
        final = self.checkpoint_dir(run_id, kind, name)
        path = tinker_path(run_id, kind, name)
        info = {
            **metadata,
            "checkpoint_id": f"{kind}/{name}",
            "checkpoint_type": KINDS[kind],
            "tinker_path": path,
            "training_run_id": run_id,
            "time": when or iso(self.now()),
            "size_bytes": sum(f["size"] for f in files.values()),
            "public": False,
            "files": files,
        }
        try:
            (staged / METADATA_FILE).write_text(json.dumps(with_checksum(info), indent=2))
            (staged / MARKER_FILE).write_text("")
            _fsync_tree(staged)
        except OSError as e:
            raise storage_error(f"imported checkpoint {path}", self.root, e) from None
        with self._commit_lock:
            run = self.load_run(run_id)  # a damaged record: 422, nothing written
            if run is not None:
                mine = (run_record["base_model"], run_record["lora_rank"])
                if (run.get("base_model"), run.get("lora_rank")) != mine:
                    raise conflict(f"training run {run_id!r} on this engine is of base model {run.get('base_model')!r} "
                                   f"with LoRA rank {run.get('lora_rank')}; {path} is of {mine[0]!r} with rank {mine[1]}")
            if final.exists():
                try:
                    existing = read_record(final / METADATA_FILE, f"checkpoint {path}")
                except (EngineError, OSError):
                    existing = None  # metadata missing or damaged: replaced by the import (a repair)
                if existing is not None and self.is_expired(existing):
                    self._expire_locked(run_id, kind, name, existing.get("expires_at"))
                elif existing is not None:
                    if existing.get("files") != files:
                        raise conflict(f"checkpoint {path} already exists on this engine with other content; "
                                       "delete it first or import under another name")
                    try:
                        self.verify(path)
                        return False  # the same checkpoint: nothing to do
                    except CheckpointDamaged:
                        pass  # the same files recorded, damaged on disk: replaced by the import
            created_run = False
            try:
                if run is None:
                    self.save_run(run_record)
                    created_run = True
                final.parent.mkdir(parents=True, exist_ok=True)
                _rename_into_place(staged, final, "deleted")
            except (OSError, StorageError) as e:
                if created_run:  # nothing of the import stays behind
                    (self.run_dir(run_id) / "run.json").unlink(missing_ok=True)
                    for d in (final.parent, self.run_dir(run_id)):
                        with contextlib.suppress(OSError):
                            d.rmdir()  # only when empty
                if isinstance(e, StorageError):
                    raise
                raise storage_error(f"imported checkpoint {path}", self.root, e) from None
            self._tombstone(run_id, kind, name).unlink(missing_ok=True)
        for file_name, record in files.items():  # hashed while unpacked: no need to read them again
            self._remember(final / file_name, record)
        return True

    def metadata(self, path: str) -> dict:
        """A checkpoint's metadata (checkpoint.json, checked against its own checksum)."""
        run_id, kind, name = parse_tinker_path(path)
        meta_file = self.checkpoint_dir(run_id, kind, name) / METADATA_FILE
        if not meta_file.is_file():
            self._raise_if_expired(run_id, kind, name)
            raise not_found(f"checkpoint {path!r} not found")
        meta = read_record(meta_file, f"checkpoint {path}")
        if self.is_expired(meta):
            self._expire(run_id, kind, name, meta.get("expires_at"))
            if not meta_file.is_file():
                raise CheckpointExpired(path, meta.get("expires_at"))
            return self.metadata(path)  # saved again under its name meanwhile: the new one
        for key in ("base_model", "checkpoint_type", "lora"):
            if key not in meta:
                raise CheckpointDamaged(f"checkpoint {path}", meta_file, f"its metadata has no {key!r}")
        return meta

    def verify(self, path: str) -> dict:
        """Metadata of a checkpoint whose every file has the size and sha256 recorded when it was
        written (raises CheckpointDamaged naming the first file that does not)."""
        meta = self.metadata(path)
        directory = self.checkpoint_dir(*parse_tinker_path(path))
        files = meta.get("files")
        if files is None:  # written before checksums were recorded: nothing to compare with
            return meta
        if not isinstance(files, dict):
            raise CheckpointDamaged(f"checkpoint {path}", directory / METADATA_FILE, "its file list is malformed")
        for file_name, record in sorted(files.items()):
            self._verify_file(path, directory / file_name, record)
        return meta

    def reader(self, path: str):
        """`read(file_name)` → the bytes of one file of a checkpoint, checked against the size and
        sha256 recorded when it was written (CheckpointDamaged otherwise), or None when the
        checkpoint has no such file. What is checked is exactly what the caller then parses."""
        meta = self.metadata(path)
        directory = self.checkpoint_dir(*parse_tinker_path(path))
        files = meta.get("files")

        def read(file_name: str):
            record = files.get(file_name) if isinstance(files, dict) else None
            file = directory / file_name
            if files is not None and record is None:
                return None  # not part of the checkpoint as written
            try:
                data = file.read_bytes()
            except FileNotFoundError:
                self._raise_if_expired(*parse_tinker_path(path))  # swept while being read
                if record is not None:
                    raise CheckpointDamaged(f"checkpoint {path}", file, "the file is missing") from None
                return None
            if record is not None:
                if len(data) != record.get("size"):
                    raise CheckpointDamaged(f"checkpoint {path}", file,
                                            f"{len(data)} bytes where {record.get('size')} were written (truncated or overwritten)")
                digest = hashlib.sha256(data).hexdigest()
                if digest != record.get("sha256"):
                    raise CheckpointDamaged(f"checkpoint {path}", file, f"sha256 {digest[:16]}… does not match the "
                                                                       f"{str(record.get('sha256'))[:16]}… recorded when it was written")
            return data

        return read

    def _verify_file(self, path: str, file: Path, record) -> None:
        what = f"checkpoint {path}"
        if not isinstance(record, dict) or not isinstance(record.get("size"), int) or not record.get("sha256"):
            raise CheckpointDamaged(what, file.parent / METADATA_FILE, f"the record of {file.name} is malformed")
        try:
            st = file.stat()
        except FileNotFoundError:
            raise CheckpointDamaged(what, file, "the file is missing") from None
        if st.st_size != record["size"]:
            raise CheckpointDamaged(what, file, f"{st.st_size} bytes where {record['size']} were written (truncated or overwritten)")
        key = (str(file), st.st_ino, st.st_size, st.st_mtime_ns)
        with self._verified_lock:
            if self._verified.get(key) == record["sha256"]:
                return
        size, digest = file_digest(file)
        if size != record["size"] or digest != record["sha256"]:
            raise CheckpointDamaged(what, file, f"sha256 {digest[:16]}… does not match the {record['sha256'][:16]}… "
                                                "recorded when it was written")
        with self._verified_lock:
            self._verified[key] = digest

    def _remember(self, file: Path, record: dict) -> None:
        try:
            st = file.stat()
        except OSError:
            return
        with self._verified_lock:
            if len(self._verified) > 100_000:
                self._verified.clear()
            self._verified[(str(file), st.st_ino, st.st_size, st.st_mtime_ns)] = record["sha256"]

    def list(self, run_id: str) -> list:
        out = []
        run = self.run_dir(run_id)
        for kind in KINDS:
            kd = run / kind
            if not kd.is_dir():
                continue
            for d in kd.iterdir():
                if not d.name.startswith(".") and (d / METADATA_FILE).is_file():
                    try:
                        out.append(public_checkpoint(self.metadata(tinker_path(run_id, kind, d.name))))
                    except CheckpointExpired:  # deleted just now: as on the hosted service, no longer listed
                        continue
                    except EngineError as e:  # damaged: not offered to anyone, reported in the log
                        log.warning("skipping checkpoint %s: %s", d, e.detail)
        return sorted(out, key=lambda c: c["time"])

    def list_all(self) -> list:
        out = []
        for d in self.runs.iterdir():
            if not d.name.startswith("."):
                out.extend(self.list(d.name))
        return sorted(out, key=lambda c: c["time"], reverse=True)

    def delete(self, run_id: str, checkpoint_id: str) -> None:
        kind, _, name = checkpoint_id.partition("/")
        if kind not in KINDS or not name:
            raise bad_request(f"invalid checkpoint id {checkpoint_id!r}: expected weights/<name> or sampler_weights/<name>")
        d = self.checkpoint_dir(run_id, kind, name)
        if not (d / METADATA_FILE).is_file():
            raise not_found(f"checkpoint {checkpoint_id!r} of run {run_id!r} not found")
        trash = d.parent / f".trash-deleted-{uuid.uuid4().hex}"
        os.rename(d, trash)
        shutil.rmtree(trash, ignore_errors=True)

    def set_ttl(self, run_id: str, checkpoint_id: str, ttl_seconds) -> None:
        kind, _, name = checkpoint_id.partition("/")
        if kind not in KINDS or not name:
            raise bad_request(f"invalid checkpoint id {checkpoint_id!r}")
        meta_file = self.checkpoint_dir(run_id, kind, name) / METADATA_FILE
        if not meta_file.is_file():
            self._raise_if_expired(run_id, kind, name)
            raise not_found(f"checkpoint {checkpoint_id!r} of run {run_id!r} not found")
        meta = read_record(meta_file, f"checkpoint {tinker_path(run_id, kind, name)}")
        if self.is_expired(meta):  # too late to extend: as gone as if the sweep had run
            self._expire(run_id, kind, name, meta.get("expires_at"))
            if not meta_file.is_file():
                raise CheckpointExpired(tinker_path(run_id, kind, name), meta.get("expires_at"))
            return self.set_ttl(run_id, checkpoint_id, ttl_seconds)  # saved again meanwhile: extend the new one
        meta["expires_at"] = self.expires_at(check_ttl(ttl_seconds))
        try:
            _write_json_atomic(meta_file, with_checksum(meta) if CHECKSUM_KEY in meta else meta)
        except OSError as e:
            error = storage_error(f"the ttl of checkpoint {tinker_path(run_id, kind, name)}", self.root, e)
            raise EngineError(507 if error.out_of_space else 500, error.message) from None

    # -------------------------------------------------------------------------- expiry

    def _tombstone(self, run_id: str, kind: str, name: str) -> Path:
        return self.run_dir(run_id) / kind / f".expired-{name}.json"

    def _raise_if_expired(self, run_id: str, kind: str, name: str) -> None:
        tomb = self._tombstone(run_id, kind, name)
        if tomb.is_file():
            try:
                expired_at = json.loads(tomb.read_text()).get("expires_at")
            except (OSError, ValueError, AttributeError):
                expired_at = None
            raise CheckpointExpired(tinker_path(run_id, kind, name), expired_at)

    def _expire(self, run_id: str, kind: str, name: str, expired_at) -> bool:
        """Deletes an expired checkpoint, leaving its tombstone; False if it was already gone."""
        with self._commit_lock:
            return self._expire_locked(run_id, kind, name, expired_at)

    def _expire_locked(self, run_id: str, kind: str, name: str, expired_at) -> bool:
        d = self.checkpoint_dir(run_id, kind, name)
        path = tinker_path(run_id, kind, name)
        try:  # what the caller read may have been replaced since by a save under the same name
            if not self.is_expired(read_record(d / METADATA_FILE, f"checkpoint {path}")):
                return False
        except (EngineError, OSError):
            return False
        try:
            # The tombstone first: a reader that finds the files gone then finds why.
            _write_json_atomic(self._tombstone(run_id, kind, name),
                               {"tinker_path": path, "expires_at": expired_at, "deleted_at": iso(self.now())})
        except OSError as e:  # a full disk must not keep expired weights alive: delete without it
            log.warning("could not write the tombstone of expired checkpoint %s: %s", path, e)
        trash = d.parent / f".trash-deleted-{uuid.uuid4().hex}"
        try:
            os.rename(d, trash)
        except FileNotFoundError:
            return False
        shutil.rmtree(trash, ignore_errors=True)
        log.info("checkpoint %s expired at %s: deleted", path, expired_at)
        return True

    def sweep_expired(self) -> list:
        """Deletes every checkpoint whose TTL has run out; returns their tinker paths."""
        removed = []
        for kind_dir in sorted(self.runs.glob("*/*")):
            if not kind_dir.is_dir() or kind_dir.name not in KINDS or kind_dir.parent.name.startswith("."):
                continue
            for d in sorted(kind_dir.iterdir()):
                meta_file = d / METADATA_FILE
                if d.name.startswith(".") or not meta_file.is_file():
                    continue
                try:
                    meta = read_record(meta_file, f"checkpoint {d}")
                except (EngineError, OSError):  # damaged: refused on load, never deleted on a guess
                    continue
                if self.is_expired(meta):
                    run_id = kind_dir.parent.name
                    if self._expire(run_id, kind_dir.name, d.name, meta.get("expires_at")):
                        removed.append(tinker_path(run_id, kind_dir.name, d.name))
        return removed

    def recover(self) -> None:
        """Removes leftovers of interrupted writes and imports; restores a checkpoint whose overwrite was cut."""
        shutil.rmtree(self.root / IMPORTS_DIR, ignore_errors=True)
        for kind_dir in self.runs.glob("*/*"):
            if not kind_dir.is_dir() or kind_dir.name not in KINDS:
                continue
            for d in list(kind_dir.iterdir()):
                if d.name.startswith(".tmp-") or d.name.startswith(".trash-deleted-"):
                    shutil.rmtree(d, ignore_errors=True)
                elif d.name.startswith(".trash-"):
                    original = kind_dir / d.name[len(".trash-") :].rsplit("-", 1)[0]
                    if original.exists():
                        shutil.rmtree(d, ignore_errors=True)
                    else:
                        os.rename(d, original)


def check_ttl(ttl_seconds):
    if ttl_seconds is not None and not -MAX_TTL_SECONDS <= ttl_seconds <= MAX_TTL_SECONDS:
        raise bad_request(f"ttl_seconds must be at most {MAX_TTL_SECONDS} (100 years) in magnitude, got {ttl_seconds}")
    return ttl_seconds


def expires_at(ttl_seconds):
    """`expires_at` on the wall clock (CheckpointStore.expires_at uses the store's own clock)."""
    if ttl_seconds is None:
        return None
    return iso(utc_now() + dt.timedelta(seconds=int(ttl_seconds)))


def public_checkpoint(meta: dict) -> dict:
    return {
        "checkpoint_id": meta["checkpoint_id"],
        "checkpoint_type": meta["checkpoint_type"],
        "time": meta["time"],
        "tinker_path": meta["tinker_path"],
        "size_bytes": meta.get("size_bytes"),
        "public": False,
        "expires_at": meta.get("expires_at"),
    }
