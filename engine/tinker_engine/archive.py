"""Checkpoint archives: the download route of the Tinker protocol (SDK ≤ 0.25, `RestClient.
get_checkpoint_archive_url`), served by the engine.

`GET /api/v1/training_runs/{run}/checkpoints/{kind}/{name}/archive` answers, like the hosted
service, `200 {"url", "expires"}`: a signed URL, valid for ARCHIVE_URL_TTL seconds, that downloads
the checkpoint as a plain tar without an API key (as the SDK's `tinker checkpoint download` does
with urllib). The tar holds the checkpoint's payload files — `adapter_config.json`,
`adapter_model.safetensors` (PEFT layout), the optimizer state of a `weights` checkpoint — the
engine's own `tinker_engine_checkpoint.json` (base model, full LoRA spec, save time: what an import
into another engine records, see checkpoint_import.py) and, last, the empty `checkpoint_complete`
marker; every file is checked against the sha256 recorded at save
before it is sent, so a damaged checkpoint is refused (422) rather than handed out.

The signature is an HMAC (a key made per engine process) over the checkpoint path and expiry;
the URL stops working at `expires` or when the engine restarts, after which the client asks the
archive route again.
"""

import asyncio
import datetime as dt
import hashlib
import hmac
import io
import json
import secrets
import tarfile
import tempfile
import time
from urllib.parse import parse_qs, quote, unquote

from starlette.requests import Request
from starlette.responses import Response

from . import checkpoints as ckpt
from .errors import EngineError

ARCHIVE_URL_TTL = 15 * 60
DOWNLOAD_PREFIX = "/checkpoint_archives/"
_CHUNK = 1 << 20


def _json(status: int, data: dict) -> Response:
    return Response(json.dumps(data), status_code=status, media_type="application/json")


def build_archive(store: ckpt.CheckpointStore, path: str, out) -> None:
    """Writes the tar of checkpoint `path` into the binary file `out` (files verified first)."""
    meta = store.verify(path)
    run_id, kind, name = ckpt.parse_tinker_path(path)
    directory = store.checkpoint_dir(run_id, kind, name)
    files = meta.get("files")
    if isinstance(files, dict):
        names = sorted(files)
    else:  # written before checksums were recorded: every payload file in the folder
        names = sorted(f.name for f in directory.iterdir()
                       if f.is_file() and f.name not in (ckpt.METADATA_FILE, ckpt.MARKER_FILE))
    read = store.reader(path)
    mtime = int(time.time())
    extra = {ckpt.MARKER_FILE: b"", ckpt.ARCHIVE_METADATA_FILE: archive_metadata(meta)}
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        # The marker last, as its name says: a tar cut short lacks it.
        for file_name in [n for n in names if n not in extra] + [ckpt.ARCHIVE_METADATA_FILE, ckpt.MARKER_FILE]:
            data = extra[file_name] if file_name in extra else read(file_name)
            if data is None:
                raise ckpt.CheckpointDamaged(f"checkpoint {path}", directory / file_name, "the file is missing")
            info = tarfile.TarInfo(file_name)
            info.size = len(data)
            info.mtime = mtime
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))


def archive_metadata(meta: dict) -> bytes:
    """The archive's `tinker_engine_checkpoint.json`: what the engine records about a checkpoint
    beyond its PEFT files (the full LoRA spec, seed included, and when it was saved), read back by
    an import into another engine (checkpoint_import.py); archives without it import too."""
    data = {
        "format": 1,
        "base_model": meta["base_model"],
        "checkpoint_type": meta["checkpoint_type"],
        "lora": meta["lora"],
        "time": meta.get("time"),
    }
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


class ArchiveDownloads:
    """The archive route (behind the API-key check) and the signed download it points to (in front
    of it: a signed URL is its own credential)."""

    def __init__(self, engine, api_prefix: str):
        self.engine = engine
        self.api = api_prefix
        self._key = secrets.token_bytes(32)

    def _signature(self, path: str, expires: int) -> str:
        return hmac.new(self._key, f"{path}\n{expires}".encode(), hashlib.sha256).hexdigest()

    def signed_url(self, base_url: str, path: str, now: float | None = None) -> tuple:
        expires = int((now if now is not None else time.time()) + ARCHIVE_URL_TTL)
        run_id, kind, name = ckpt.parse_tinker_path(path)
        segments = "/".join(quote(s, safe="") for s in (run_id, kind, f"{name}.tar"))
        url = f"{base_url.rstrip('/')}{self.api}{DOWNLOAD_PREFIX}{segments}?expires={expires}&signature={self._signature(path, expires)}"
        return url, expires

    def add_routes(self, app) -> None:
        store = self.engine.store

        @app.get(self.api + "/training_runs/{run_id}/checkpoints/{kind}/{name}/archive")
        async def checkpoint_archive(run_id: str, kind: str, name: str, request: Request):
            if kind not in ckpt.KINDS:
                raise EngineError(400, f"invalid checkpoint id {kind}/{name!r}: expected weights/<name> or sampler_weights/<name>")
            path = ckpt.tinker_path(ckpt.check_run_id(run_id), kind, ckpt.check_name(name))
            await asyncio.to_thread(store.verify, path)  # 404 unknown, 422 damaged: before any URL is given
            url, expires = self.signed_url(str(request.base_url), path)
            when = dt.datetime.fromtimestamp(expires, dt.timezone.utc).isoformat().replace("+00:00", "Z")
            return _json(200, {"url": url, "expires": when})

    def wrap(self, inner):
        """ASGI app: signed downloads are answered here, everything else goes to `inner`."""
        prefix = self.api + DOWNLOAD_PREFIX

        async def app(scope, receive, send):
            if scope["type"] == "http" and scope["path"].startswith(prefix):
                return await self._download(scope, receive, send, scope["path"][len(prefix):])
            return await inner(scope, receive, send)

        return app

    async def _download(self, scope, receive, send, rest: str):
        parts = [unquote(p) for p in rest.split("/")]
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if scope["method"] not in ("GET", "HEAD"):
            return await _json(405, {"detail": "checkpoint archives are downloaded with GET"})(scope, receive, send)
        if len(parts) != 3 or not parts[2].endswith(".tar"):
            return await _json(404, {"detail": "not a checkpoint archive URL"})(scope, receive, send)
        run_id, kind, name = parts[0], parts[1], parts[2][: -len(".tar")]
        try:
            path = ckpt.tinker_path(ckpt.check_run_id(run_id), kind, ckpt.check_name(name))
            ckpt.parse_tinker_path(path)
        except EngineError as e:
            return await _json(e.status, {"detail": e.detail})(scope, receive, send)
        try:
            expires = int(query.get("expires", [""])[0])
        except ValueError:
            expires = 0
        signature = query.get("signature", [""])[0]
        if not hmac.compare_digest(signature, self._signature(path, expires)):
            return await _json(403, {"detail": f"invalid signature for the archive of {path}: ask "
                                               "GET …/checkpoints/<kind>/<name>/archive for a new URL"})(scope, receive, send)
        if expires < time.time():
            return await _json(403, {"detail": f"the download URL of {path} expired; ask "
                                               "GET …/checkpoints/<kind>/<name>/archive for a new one"})(scope, receive, send)
        spool = tempfile.SpooledTemporaryFile(max_size=64 << 20)
        try:
            try:
                await asyncio.to_thread(build_archive, self.engine.store, path, spool)
            except EngineError as e:
                return await _json(e.status, {"detail": e.detail})(scope, receive, send)
            size = spool.tell()
            spool.seek(0)
            await send({
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/x-tar"),
                    (b"content-length", str(size).encode()),
                    (b"content-disposition", f'attachment; filename="{name}.tar"'.encode()),
                ],
            })
            if scope["method"] == "HEAD":
                return await send({"type": "http.response.body", "body": b""})
            while True:
                chunk = await asyncio.to_thread(spool.read, _CHUNK)
                more = len(chunk) == _CHUNK
                await send({"type": "http.response.body", "body": chunk, "more_body": more})
                if not more:
                    break
        finally:
            spool.close()
