"""Checkpoint TTLs expire as on the hosted service: an expired checkpoint is deleted (sweep at
startup, periodic sweep, or first access), no longer listed, and refused with a 404 that names the
path and says it expired. Store-level tests move an injected clock; the HTTP tests use TTLs of a
second or two on the real engine."""

import datetime as dt
import json
import time

import pytest
from http_client import Client, corpus, datum

from tinker_engine.checkpoints import CheckpointExpired, CheckpointStore, tinker_path
from tinker_engine.errors import EngineError

RUN = "sess-1:train:0"
T0 = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)


class Clock:
    def __init__(self):
        self.t = T0

    def __call__(self):
        return self.t

    def advance(self, seconds):
        self.t += dt.timedelta(seconds=seconds)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(tmp_path, clock):
    return CheckpointStore(tmp_path / "data", now=clock)


def save(store, name, ttl, kind="weights", payload=b"weights"):
    meta = {"base_model": "tiny-qwen3", "lora": {"rank": 4}, "lora_rank": 4, "expires_at": store.expires_at(ttl)}
    return store.write(RUN, kind, name, lambda d: (d / "adapter_model.safetensors").write_bytes(payload), meta, True)


def listed(store):
    return sorted(c["checkpoint_id"] for c in store.list(RUN))


def test_expires_at_is_recorded_and_listed_until_it_passes(store, clock):
    save(store, "keep", None)
    info = save(store, "short", 3600)
    assert info["expires_at"] == "2030-01-01T01:00:00Z"
    by_id = {c["checkpoint_id"]: c for c in store.list(RUN)}
    assert by_id["weights/short"]["expires_at"] == "2030-01-01T01:00:00Z"
    assert by_id["weights/keep"]["expires_at"] is None
    clock.advance(3599)
    assert listed(store) == ["weights/keep", "weights/short"]
    store.verify(tinker_path(RUN, "weights", "short"))  # still loadable one second before
    clock.advance(1)  # expires_at reached: expired
    assert listed(store) == ["weights/keep"]
    assert not (store.runs / RUN / "weights" / "short").exists()  # listing deleted it


def test_loading_an_expired_checkpoint_is_a_404_naming_the_path_and_the_expiry(store, clock):
    save(store, "short", 60)
    path = tinker_path(RUN, "weights", "short")
    clock.advance(61)
    for attempt in range(2):  # lazily deleted on the first access, refused the same way afterwards
        with pytest.raises(CheckpointExpired) as e:
            store.verify(path)
        assert e.value.status == 404
        assert path in e.value.detail and "expired at 2030-01-01T00:01:00Z" in e.value.detail
        assert not (store.runs / RUN / "weights" / "short").exists()
    with pytest.raises(CheckpointExpired):
        store.reader(path)
    # A path that never existed is still a plain "not found".
    with pytest.raises(EngineError) as e:
        store.verify(tinker_path(RUN, "weights", "never"))
    assert e.value.status == 404 and "expired" not in e.value.detail


def test_the_sweep_deletes_only_expired_checkpoints_from_disk(store, clock):
    save(store, "a", 10)
    save(store, "b", 100)
    save(store, "c", None)
    save(store, "a", 10, kind="sampler_weights")
    clock.advance(50)
    assert sorted(store.sweep_expired()) == [tinker_path(RUN, "sampler_weights", "a"), tinker_path(RUN, "weights", "a")]
    run = store.runs / RUN
    assert not (run / "weights" / "a").exists() and not (run / "sampler_weights" / "a").exists()
    assert (run / "weights" / "b").is_dir() and (run / "weights" / "c").is_dir()
    assert not list(run.glob("*/.trash-*"))
    assert store.sweep_expired() == []
    clock.advance(10 ** 8)
    assert store.sweep_expired() == [tinker_path(RUN, "weights", "b")]
    assert listed(store) == ["weights/c"]


def test_a_restarted_store_sweeps_at_startup(tmp_path, clock):
    first = CheckpointStore(tmp_path / "data", now=clock)
    save(first, "short", 30)
    save(first, "long", 3000)
    clock.advance(31)
    CheckpointStore(tmp_path / "data", now=clock)
    run = tmp_path / "data" / "runs" / RUN / "weights"
    assert not (run / "short").exists() and (run / "long").is_dir()


def test_extending_the_ttl_before_expiry_keeps_it_and_after_expiry_is_refused(store, clock):
    save(store, "x", 60)
    save(store, "y", 60)
    save(store, "z", 60)
    clock.advance(50)
    store.set_ttl(RUN, "weights/x", 3600)  # from now: expires 3650 s after the save
    store.set_ttl(RUN, "weights/y", None)  # never
    clock.advance(20)
    assert listed(store) == ["weights/x", "weights/y"]
    with pytest.raises(CheckpointExpired):
        store.set_ttl(RUN, "weights/z", 3600)
    clock.advance(3600)
    assert listed(store) == ["weights/y"]
    meta = json.loads((store.runs / RUN / "weights" / "y" / "checkpoint.json").read_text())
    assert meta["expires_at"] is None


def test_saving_again_under_an_expired_name_gives_a_live_checkpoint(store, clock):
    save(store, "rolling", 10, payload=b"old")
    clock.advance(11)
    assert store.sweep_expired()
    save(store, "rolling", 10, payload=b"new")
    assert store.reader(tinker_path(RUN, "weights", "rolling"))("adapter_model.safetensors") == b"new"
    assert listed(store) == ["weights/rolling"]


def test_damaged_or_unreadable_expiry_never_deletes(store, clock):
    save(store, "damaged", 10)
    save(store, "odd", None)
    d = store.runs / RUN / "weights"
    (d / "damaged" / "checkpoint.json").write_text("{not json")
    meta = json.loads((d / "odd" / "checkpoint.json").read_text())
    meta["expires_at"] = "someday"
    meta.pop("checksum")
    (d / "odd" / "checkpoint.json").write_text(json.dumps(meta))
    clock.advance(100)
    assert store.sweep_expired() == []
    assert (d / "damaged").is_dir() and (d / "odd").is_dir()


# ------------------------------------------------------------------ the real engine over HTTP


def _train_and_save(c, name, ttl):
    model = c.create_model(c.session(), 0, seed=3, rank=4)
    c.forward_backward(model, 1, [datum(s) for s in corpus(2, 20)])
    c.optim_step(model, 2, lr=1e-2)
    state = c.done(c.ok("save_weights", {"model_id": model, "seq_id": 3, "path": name, "ttl_seconds": ttl})["request_id"])["path"]
    keep = c.done(c.ok("save_weights", {"model_id": model, "seq_id": 4, "path": "keep"})["request_id"])["path"]
    return model, state, keep


def test_engine_expired_checkpoint_is_unlisted_refused_and_deleted(fresh_engine, tmp_path):
    engine = fresh_engine(tmp_path / "data", "--checkpoint-sweep-seconds", "0")  # lazily, on access
    c = Client(engine.url)
    model, state, keep = _train_and_save(c, "short", 2)
    listed = {ck["checkpoint_id"]: ck for ck in c.get(f"training_runs/{model}/checkpoints").json()["checkpoints"]}
    assert listed["weights/short"]["expires_at"] is not None and listed["weights/keep"]["expires_at"] is None
    time.sleep(2.5)
    assert [ck["checkpoint_id"] for ck in c.get(f"training_runs/{model}/checkpoints").json()["checkpoints"]] == ["weights/keep"]
    assert state not in [ck["tinker_path"] for ck in c.get("checkpoints").json()["checkpoints"]]
    assert not (tmp_path / "data" / "runs" / model / "weights" / "short").exists()
    for path, body in [("weights_info", {"tinker_path": state}),
                       ("load_weights", {"session_id": c.session(), "model_seq_id": 0, "path": state, "seq_id": 0}),
                       ("create_sampling_session", {"session_id": c.session(), "model_path": state})]:
        r = c.post(path, body)
        assert r.status == 404, (path, r.status, r.raw)
        assert state in r.raw.decode() and "expired" in r.raw.decode(), (path, r.raw)
    r = c.request("PUT", f"training_runs/{model}/checkpoints/weights/short/ttl", {"ttl_seconds": 3600})
    assert r.status == 404 and "expired" in r.raw.decode()
    assert c.ok("weights_info", {"tinker_path": keep})["lora_rank"] == 4


def test_engine_sweeps_periodically_and_at_startup_and_honours_ttl_extension(fresh_engine, tmp_path):
    data = tmp_path / "data"
    engine = fresh_engine(data, "--checkpoint-sweep-seconds", "0.3")
    c = Client(engine.url)
    model, _, _ = _train_and_save(c, "swept", 1)
    saved_at = time.time()
    extended = c.done(c.ok("save_weights", {"model_id": model, "seq_id": 5, "path": "extended", "ttl_seconds": 5})["request_id"])["path"]
    assert c.request("PUT", f"training_runs/{model}/checkpoints/weights/extended/ttl", {"ttl_seconds": 3600}).status == 204
    run = data / "runs" / model / "weights"
    deadline = time.time() + 15
    while (run / "swept").exists() and time.time() < deadline:  # no request touches it: the sweeper does
        time.sleep(0.2)
    assert not (run / "swept").exists()
    time.sleep(max(0.0, saved_at + 5.5 - time.time()))  # past the extended one's original expiry
    assert (run / "extended").is_dir() and c.ok("weights_info", {"tinker_path": extended})["lora_rank"] == 4
    # At startup: an engine that was down when a checkpoint expired deletes it before serving.
    c.done(c.ok("save_weights", {"model_id": model, "seq_id": 6, "path": "while-down", "ttl_seconds": 1})["request_id"])
    engine.stop()
    time.sleep(1.2)
    restarted = fresh_engine(data, "--checkpoint-sweep-seconds", "0")
    assert not (run / "while-down").exists()
    assert sorted(ck["checkpoint_id"] for ck in Client(restarted.url).get(f"training_runs/{model}/checkpoints").json()["checkpoints"]) == ["weights/extended", "weights/keep"]


def test_expiry_never_deletes_a_checkpoint_saved_again_under_the_name_meanwhile(store, clock):
    save(store, "same", 10, payload=b"old")
    clock.advance(11)
    # The sweep read the old, expired metadata; before it deletes, a save commits a live one.
    save(store, "same", 3600, payload=b"new")
    assert store._expire(RUN, "weights", "same", "2030-01-01T00:00:10Z") is False
    path = tinker_path(RUN, "weights", "same")
    assert store.reader(path)("adapter_model.safetensors") == b"new"
    assert listed(store) == ["weights/same"]
