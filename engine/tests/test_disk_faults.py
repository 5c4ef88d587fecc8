"""Faults of the disk under the engine's data dir: damaged checkpoint files and a full disk.

Damaged: every checkpoint records the size and sha256 of its files (and a checksum of its
metadata) when written; a truncated, bit-flipped, edited or missing file is refused with a 422
naming the file — at submit time, or by the load itself when the damage came after an earlier
check — and nothing of it is loaded. Full: a save on a full filesystem fails with a reason naming
ENOSPC, leaves no partial checkpoint and every committed one intact, and once space returns the
resent save succeeds (the engine redoes it, the weights being unchanged) as do new ones.
"""

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest

from http_client import Client, corpus, datum

PROBE = [datum(corpus(1, 20, 640)[0])]
TRAIN = [datum(s) for s in corpus(2, 16, 600)]


def ckpt_dir(data_dir: Path, path: str) -> Path:
    run, kind, name = path.removeprefix("tinker://").split("/")
    return data_dir / "runs" / run / kind / name


def flip_bit(file: Path, offset: int | None = None, keep_mtime: bool = False) -> None:
    st = file.stat()
    data = bytearray(file.read_bytes())
    offset = len(data) - 5 if offset is None else offset  # in the tensor data, past the header
    data[offset] ^= 0x10
    with open(file, "r+b") as f:  # in place: same inode, same size
        f.write(data)
    if keep_mtime:
        os.utime(file, ns=(st.st_atime_ns, st.st_mtime_ns))


def expect_damaged(r, file: Path):
    assert r.status == 422, (r.status, r.raw[:400])
    detail = r.json()["detail"]
    assert "is damaged" in detail and str(file) in detail, detail
    return detail


class Model:
    """A training model and its seq id cursor."""

    def __init__(self, c: Client, model_id: str, next_seq: int):
        self.c, self.id, self.seq = c, model_id, next_seq

    def next(self) -> int:
        self.seq += 1
        return self.seq - 1

    def save(self, name: str, kind: str = "weights") -> str:
        route = "save_weights" if kind == "weights" else "save_weights_for_sampler"
        f = self.c.ok(route, {"model_id": self.id, "seq_id": self.next(), "path": name})
        return self.c.done(f["request_id"])["path"]

    def logprobs(self):
        return self.c.forward_logprobs(self.id, self.next(), PROBE)

    def load(self, path: str, optimizer: bool = True):
        return self.c.post("load_weights", {"model_id": self.id, "seq_id": self.next(), "path": path,
                                            "optimizer": optimizer})


def trained_model(c: Client, rank: int = 4, **lora) -> Model:
    sid = c.session()
    f = c.ok("create_model", {"session_id": sid, "model_seq_id": 0, "base_model": "tiny-qwen3",
                              "lora_config": {"rank": rank, "seed": 5, **lora}})
    c.done(f["request_id"])
    m = Model(c, f["model_id"], 1)
    c.forward_backward(m.id, m.next(), TRAIN)
    c.optim_step(m.id, m.next(), lr=5e-2)
    return m


def create_via_load(c: Client, path: str):
    return c.post("load_weights", {"session_id": c.session(), "model_seq_id": 0, "path": path, "optimizer": True})


def test_damaged_checkpoints_are_refused_naming_the_file(fresh_engine, tmp_path):
    engine = fresh_engine(tmp_path / "data")
    c = Client(engine.url)
    m = trained_model(c)
    at_save = m.logprobs()
    good = m.save("good")
    # Every kind of damage, each on its own copy of the same weights.
    damage = {
        "adapter truncated": ("adapter_model.safetensors", lambda f: f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])),
        "adapter bit flipped": ("adapter_model.safetensors", flip_bit),
        "optimizer bit flipped": ("optimizer.safetensors", flip_bit),
        "optimizer steps removed": ("optimizer.json", lambda f: f.unlink()),
        "metadata edited": ("checkpoint.json", lambda f: f.write_text(f.read_text().replace('"lora_rank": 4', '"lora_rank": 5'))),
        "metadata truncated": ("checkpoint.json", lambda f: f.write_bytes(f.read_bytes()[:40])),
    }
    damaged = {}
    for case, (file_name, spoil) in damage.items():
        path = m.save(case.replace(" ", "-"))
        file = ckpt_dir(engine.data_dir, path) / file_name
        spoil(file)
        damaged[case] = (path, file)
    sampler = m.save("sampler-flipped", kind="sampler")
    sampler_file = ckpt_dir(engine.data_dir, sampler) / "adapter_model.safetensors"
    flip_bit(sampler_file)

    # Weights that are not the saved ones, so that a load that slipped through would show.
    c.forward_backward(m.id, m.next(), TRAIN)
    c.optim_step(m.id, m.next(), lr=5e-2)
    moved = m.logprobs()
    assert moved != at_save

    for case, (path, file) in damaged.items():
        expect_damaged(c.post("weights_info", {"tinker_path": path}), file)
        expect_damaged(m.load(path), file)
        expect_damaged(create_via_load(c, path), file)
    expect_damaged(c.post("create_sampling_session", {"session_id": c.session(), "sampling_session_seq_id": 0,
                                                      "model_path": sampler}), sampler_file)
    assert m.logprobs() == moved, "a refused load changed the model"

    # Listing skips checkpoints whose metadata is damaged and never fails.
    listed = c.get(f"training_runs/{m.id}/checkpoints")
    assert listed.status == 200
    names = {ck["checkpoint_id"] for ck in listed.json()["checkpoints"]}
    assert "weights/good" in names and "weights/metadata-truncated" not in names and "weights/metadata-edited" not in names
    assert c.get(f"training_runs/{m.id}").status == 200

    # The last good checkpoint restores exactly what was saved.
    restored = create_via_load(c, good)
    assert restored.status == 200, restored.raw
    c.done(restored.json()["request_id"])
    assert c.forward_logprobs(restored.json()["model_id"], 1, PROBE) == at_save

    # Damage after the checkpoint was checked once (same inode, size and mtime: the submit-time
    # check remembers it as verified) is still caught by the load, which hashes what it parses.
    assert m.load(good).status == 200  # verified, loaded
    m.c.done(f"{m.id}:{m.seq - 1}")
    c.forward_backward(m.id, m.next(), TRAIN)
    c.optim_step(m.id, m.next(), lr=5e-2)
    moved = m.logprobs()
    good_file = ckpt_dir(engine.data_dir, good) / "optimizer.safetensors"
    flip_bit(good_file, keep_mtime=True)
    r = m.load(good)
    assert r.status == 200, r.raw  # the remembered check passes...
    failed = c.result(r.json()["request_id"])
    assert "is damaged" in failed["error"] and str(good_file) in failed["error"], failed  # ...the load does not
    assert failed["category"] == "user"
    assert m.logprobs() == moved, "a failed load changed the model"
    log = engine.log_path.read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


# ------------------------------------------------------------------------------------ full disk


@pytest.fixture
def small_disk(tmp_path):
    """A 6 MiB tmpfs mounted for the test (needs root)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a full disk is simulated with a small tmpfs, which needs root to mount")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"could not mount a tmpfs to simulate a full disk: {r.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> Path:
    """Writes a filler file until the filesystem refuses another byte."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)
    return filler


def tree_digest(directory: Path) -> dict:
    import hashlib

    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_full_disk_fails_saves_cleanly_and_they_resume(small_disk, fresh_engine):
    engine = fresh_engine(small_disk)  # the engine's log lives outside the small disk
    c = Client(engine.url)
    m = trained_model(c, rank=4, train_unembed=False)  # small checkpoints (no vocabulary-sized adapter)
    committed = m.save("committed")
    at_commit = m.logprobs()
    committed_files = tree_digest(ckpt_dir(engine.data_dir, committed))
    runs = engine.data_dir / "runs"

    filler = fill(small_disk)
    save = {"model_id": m.id, "seq_id": m.next(), "path": "while-full"}
    f = c.ok("save_weights", save)
    failed = c.result(f["request_id"])
    assert "ENOSPC" in failed["error"] and "no space left on device" in failed["error"], failed
    assert failed["category"] == "server"  # a condition of the machine: worth retrying
    sampler = c.result(c.ok("save_weights_for_sampler", {"model_id": m.id, "seq_id": m.next(), "path": "s-full"})[
        "request_id"])
    assert "ENOSPC" in sampler["error"], sampler
    ttl = c.request("PUT", f"training_runs/{m.id}/checkpoints/weights/committed/ttl", {"ttl_seconds": 60})
    assert ttl.status == 507 and "ENOSPC" in ttl.json()["detail"], ttl.raw

    # Nothing half-written is visible, and what was committed is as it was and still loads.
    assert not [p for p in runs.rglob("*") if p.name.startswith(".tmp-")], list(runs.rglob(".tmp-*"))
    names = {ck["checkpoint_id"] for ck in c.get(f"training_runs/{m.id}/checkpoints").json()["checkpoints"]}
    assert names == {"weights/committed"}
    assert c.post("weights_info", {"tinker_path": save and f"tinker://{m.id}/weights/while-full"}).status == 404
    assert tree_digest(ckpt_dir(engine.data_dir, committed)) == committed_files
    assert c.ok("weights_info", {"tinker_path": committed})["lora_rank"] == 4
    assert c.get("healthz").status == 200

    # Space returns: the resent save (same seq id, as a retrying client sends it) is redone.
    filler.unlink()
    redone = c.ok("save_weights", save)
    assert redone["request_id"] == f["request_id"]
    path = c.done(redone["request_id"])["path"]
    assert path == f"tinker://{m.id}/weights/while-full"
    assert tree_digest(ckpt_dir(engine.data_dir, committed)) == committed_files
    restored = create_via_load(c, path)
    assert restored.status == 200, restored.raw
    c.done(restored.json()["request_id"])
    assert c.forward_logprobs(restored.json()["model_id"], 1, PROBE) == at_commit

    # A resent save is redone only while the weights are the ones it was to save.
    filler = fill(small_disk)
    stale = {"model_id": m.id, "seq_id": m.next(), "path": "stale"}
    assert "ENOSPC" in c.result(c.ok("save_weights", stale)["request_id"])["error"]
    c.forward_backward(m.id, m.next(), TRAIN)
    c.optim_step(m.id, m.next(), lr=5e-2)
    filler.unlink()
    refused = c.result(c.ok("save_weights", stale)["request_id"])
    assert "cannot be redone" in refused["error"], refused
    assert c.post("weights_info", {"tinker_path": f"tinker://{m.id}/weights/stale"}).status == 404
    # ...and a new save of the current weights goes through.
    assert m.save("after") == f"tinker://{m.id}/weights/after"
    engine.stop()
