"""Checkpoint storage under the data dir, addressed by tinker paths.

Layout: <data>/runs/<run_id>/run.json and <data>/runs/<run_id>/<kind>/<name>/ where kind is
`weights` (adapter + optimizer) or `sampler_weights` (adapter only). Every directory is written
under a temporary name, fsynced and renamed into place, so a crash never leaves a partial
checkpoint behind a valid name.
"""

import datetime as dt
import json
import os
import re
import shutil
import uuid
from pathlib import Path

from .errors import bad_request, not_found

KINDS = {"weights": "training", "sampler_weights": "sampler"}
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,199}$")
_RUN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,299}$")
METADATA_FILE = "checkpoint.json"


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")


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


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".tmp-{path.name}-{uuid.uuid4().hex}")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class CheckpointStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.runs = self.root / "runs"
        self.runs.mkdir(parents=True, exist_ok=True)
        self.recover()

    # ---------------------------------------------------------------------------- runs

    def run_dir(self, run_id: str) -> Path:
        return self.runs / check_run_id(run_id)

    def save_run(self, meta: dict) -> None:
        d = self.run_dir(meta["training_run_id"])
        d.mkdir(parents=True, exist_ok=True)
        _write_json_atomic(d / "run.json", meta)

    def load_run(self, run_id: str):
        path = self.run_dir(run_id) / "run.json"
        return json.loads(path.read_text()) if path.is_file() else None

    def list_runs(self) -> list:
        runs = []
        for d in sorted(self.runs.iterdir()):
            if (d / "run.json").is_file():
                runs.append(json.loads((d / "run.json").read_text()))
        return sorted(runs, key=lambda r: r.get("created_at", ""), reverse=True)

    # --------------------------------------------------------------------- checkpoints

    def checkpoint_dir(self, run_id: str, kind: str, name: str) -> Path:
        return self.run_dir(run_id) / kind / check_name(name)

    def exists(self, run_id: str, kind: str, name: str) -> bool:
        return (self.checkpoint_dir(run_id, kind, name) / METADATA_FILE).is_file()

    def write(self, run_id: str, kind: str, name: str, fill, metadata: dict, overwrite: bool) -> dict:
        """Creates the checkpoint atomically: `fill(tmp_dir)` writes the payload files."""
        final = self.checkpoint_dir(run_id, kind, name)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".tmp-{name}-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            fill(tmp)
            size = sum(f.stat().st_size for f in tmp.iterdir() if f.is_file())
            info = {
                **metadata,
                "checkpoint_id": f"{kind}/{name}",
                "checkpoint_type": KINDS[kind],
                "tinker_path": tinker_path(run_id, kind, name),
                "training_run_id": run_id,
                "time": now_iso(),
                "size_bytes": size,
                "public": False,
            }
            (tmp / METADATA_FILE).write_text(json.dumps(info, indent=2))
            # An empty marker, as in the hosted service's checkpoint archives.
            (tmp / "checkpoint_complete").write_text("")
            _fsync_tree(tmp)
            if final.exists():
                if not overwrite:
                    raise FileExistsError(info["tinker_path"])
                trash = final.parent / f".trash-{name}-{uuid.uuid4().hex}"
                os.rename(final, trash)
                os.rename(tmp, final)
                shutil.rmtree(trash, ignore_errors=True)
            else:
                os.rename(tmp, final)
            _fsync_dir(final.parent)
            return info
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def metadata(self, path: str) -> dict:
        run_id, kind, name = parse_tinker_path(path)
        meta_file = self.checkpoint_dir(run_id, kind, name) / METADATA_FILE
        if not meta_file.is_file():
            raise not_found(f"checkpoint {path!r} not found")
        return json.loads(meta_file.read_text())

    def directory(self, path: str) -> Path:
        self.metadata(path)
        return self.checkpoint_dir(*parse_tinker_path(path))

    def list(self, run_id: str) -> list:
        out = []
        run = self.run_dir(run_id)
        for kind in KINDS:
            kd = run / kind
            if not kd.is_dir():
                continue
            for d in kd.iterdir():
                if not d.name.startswith(".") and (d / METADATA_FILE).is_file():
                    out.append(public_checkpoint(json.loads((d / METADATA_FILE).read_text())))
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
            raise not_found(f"checkpoint {checkpoint_id!r} of run {run_id!r} not found")
        meta = json.loads(meta_file.read_text())
        meta["expires_at"] = expires_at(ttl_seconds)
        _write_json_atomic(meta_file, meta)

    def recover(self) -> None:
        """Removes leftovers of interrupted writes; restores a checkpoint whose overwrite was cut."""
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


def expires_at(ttl_seconds):
    if ttl_seconds is None:
        return None
    when = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=int(ttl_seconds))
    return when.isoformat().replace("+00:00", "Z")


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
