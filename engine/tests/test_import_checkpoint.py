"""Checkpoints moved between engines (issue #41: rollouts on many sampler engines, training failover):
a checkpoint downloaded from engine A over the archive route and imported into engine B
(`POST /api/v1/import_checkpoint`) samples bitwise as on A and trains on exactly as A does; imports
are idempotent, conflicting ones 409, hostile archives 400 with nothing left behind, and the route is
behind the key. Also the emulated sampling service time (`--sample-ms-per-token`, `--sample-slots`)."""

import io
import json
import tarfile
import threading
import time
import urllib.request
from urllib.parse import quote

import pytest
import torch

from conftest import EngineProcess
from http_client import Client, corpus, datum
from tinker_engine import checkpoint_import as imp
from tinker_engine.base_models import BaseModelCache, ModelRegistry, instance_sharing_weights
from tinker_engine.cli import parse_args
from tinker_engine.lora import LoraSpec, adapter_state, attach_lora

KEY_B = "tml-import-b"
MS_PER_TOKEN = 80.0
MAX_IMPORT_MB = 16
DATA = [datum(s) for s in corpus(3, 30)]
PROBE = [datum(corpus(1, 30, 800)[0])]


def sample_body(sampler: str, seq_id: int, seed: int = 7, max_tokens: int = 8) -> dict:
    # `stop: []`: no stop token, not even EOS, so every sample generates exactly max_tokens.
    return {"sampling_session_id": sampler, "seq_id": seq_id, "num_samples": 2,
            "prompt": {"chunks": [{"tokens": [151644, 872, 198, 9707, 11]}]}, "prompt_logprobs": True,
            "sampling_params": {"max_tokens": max_tokens, "temperature": 1.0, "seed": seed, "stop": []}}


def sampler_for(c: Client, **source) -> str:
    return c.ok("create_sampling_session", {"session_id": c.session(), "sampling_session_seq_id": 0,
                                            **source})["sampling_session_id"]


def sample(c: Client, path: str, seed: int = 7) -> dict:
    return c.done(c.ok("asample", sample_body(sampler_for(c, model_path=path), 0, seed))["request_id"])


def archive(c: Client, path: str) -> bytes:
    run, kind, name = path[len("tinker://"):].split("/")
    r = c.get(f"training_runs/{run}/checkpoints/{kind}/{name}/archive")
    assert r.status == 200, r.raw
    with urllib.request.urlopen(r.json()["url"], timeout=60) as resp:  # signed: no key
        return resp.read()


def import_tar(c: Client, path: str | None, tar: bytes, query: str = ""):
    target = "import_checkpoint" + (f"?tinker_path={quote(path, safe='')}" if path is not None else "") + query
    return c.request("POST", target, raw=tar, content_type="application/x-tar")


def members(tar: bytes) -> dict:
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers()}


def build_tar(files: list) -> bytes:
    """files: (name, bytes) regular files, or (name, TarInfo) for other member types."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in files:
            if isinstance(data, tarfile.TarInfo):
                data.name = name
                t.addfile(data)
            else:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return out.getvalue()


def store_files(data_dir) -> list:
    return sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file())


def checkpoint_record(data_dir, path: str) -> dict:
    run, kind, name = path[len("tinker://"):].split("/")
    return json.loads((data_dir / "runs" / run / kind / name / "checkpoint.json").read_text())


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """A: the training engine (plain). B: an engine that imports, behind a key, with a small general body
    limit (the import has its own) and emulated sampling time on one slot. C: the same time on two slots."""
    root = tmp_path_factory.mktemp("import")
    a = EngineProcess(root / "a" / "data")
    b = EngineProcess(root / "b" / "data", "--api-key", KEY_B, "--max-body-mb", "1", "--max-import-mb",
                      str(MAX_IMPORT_MB), "--sample-ms-per-token", str(MS_PER_TOKEN), "--sample-slots", "1")
    c = EngineProcess(root / "c" / "data", "--sample-ms-per-token", str(MS_PER_TOKEN), "--sample-slots", "2")
    errors = []

    def start(proc):
        try:
            proc.start()
        except Exception as e:  # noqa: BLE001 — raised below, after the others are up or failed
            errors.append(e)

    for proc in (a, b, c):
        proc.data_dir.parent.mkdir(parents=True, exist_ok=True)
    threads = [threading.Thread(target=start, args=(proc,)) for proc in (a, b, c)]  # started side by side
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        if errors:
            raise errors[0]
        yield a, b, c
    finally:
        for proc in (a, b, c):
            proc.stop()


@pytest.fixture(scope="module")
def trained(engines):
    """On A: a LoRA trained a step, saved (state and sampler weights), probed, then trained one step more;
    both archives downloaded over the archive route."""
    a, _, _ = engines
    c = Client(a.url)
    model = c.create_model(c.session(), 0, seed=21, rank=4)
    c.forward_backward(model, 1, DATA)
    c.optim_step(model, 2, lr=2e-2)
    state = c.done(c.ok("save_weights", {"model_id": model, "seq_id": 3, "path": "step-1"})["request_id"])["path"]
    sampler = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 4, "path": "step-1"})[
        "request_id"])["path"]
    at_save = c.forward_logprobs(model, 5, PROBE)
    next_fb = c.forward_backward(model, 6, DATA)
    next_step = c.optim_step(model, 7, lr=2e-2)
    after = c.forward_logprobs(model, 8, PROBE)
    later = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 9, "path": "step-2"})[
        "request_id"])["path"]
    return {"model": model, "state": state, "sampler": sampler, "later": later, "at_save": at_save,
            "next_fb": next_fb, "next_step": next_step, "after": after,
            "state_tar": archive(c, state), "sampler_tar": archive(c, sampler), "later_tar": archive(c, later)}


def test_imported_checkpoints_sample_and_train_as_on_the_source_engine(engines, trained):
    a, b, _ = engines
    ca, cb = Client(a.url), Client(b.url, api_key=KEY_B)
    assert set(members(trained["sampler_tar"])) == {"adapter_config.json", "adapter_model.safetensors",
                                                    "tinker_engine_checkpoint.json", "checkpoint_complete"}
    # Both over B's general body limit (1 MB): the import route has its own.
    assert len(trained["state_tar"]) > 1 << 20 and len(trained["sampler_tar"]) > 1 << 20
    for key in ("state", "sampler"):
        r = import_tar(cb, trained[key], trained[f"{key}_tar"])
        assert r.status == 200 and r.json() == {"tinker_path": trained[key], "imported": True}, r.raw

    # (a) Seeded sampling: the same tokens and logprobs (prompt logprobs too) on both engines.
    on_a, on_b = sample(ca, trained["sampler"]), sample(cb, trained["sampler"])
    assert on_a == on_b and len(on_a["sequences"]) == 2 and all(len(s["tokens"]) == 8 for s in on_a["sequences"])
    for path in (trained["state"], trained["sampler"]):
        assert cb.ok("weights_info", {"tinker_path": path}) == ca.ok("weights_info", {"tinker_path": path})
        # The same metadata as the saving engine's, the LoRA seed and save time included.
        mine, theirs = checkpoint_record(b.data_dir, path), checkpoint_record(a.data_dir, path)
        assert "imported_at" in mine
        drop = ("checksum", "imported_at")
        assert {k: v for k, v in mine.items() if k not in drop} == {k: v for k, v in theirs.items() if k not in drop}

    # (b) Training moves to B: created from the imported state with its optimizer, it computes what A did.
    model = cb.ok("load_weights", {"session_id": cb.session(), "model_seq_id": 0, "path": trained["state"],
                                   "optimizer": True})
    cb.done(model["request_id"])
    model = model["model_id"]
    assert cb.forward_logprobs(model, 1, PROBE) == trained["at_save"]
    assert cb.forward_backward(model, 2, DATA) == trained["next_fb"]
    assert cb.optim_step(model, 3, lr=2e-2) == trained["next_step"]
    assert cb.forward_logprobs(model, 4, PROBE) == trained["after"]
    # Loaded without the optimizer into a model of B's own: the weights as saved.
    fresh = cb.create_model(cb.session(), 0, seed=5, rank=4)
    cb.done(cb.ok("load_weights", {"model_id": fresh, "seq_id": 1, "path": trained["state"], "optimizer": False})[
        "request_id"])
    assert cb.forward_logprobs(fresh, 2, PROBE) == trained["at_save"]

    # Listed under their run, with the run's record (as the saving engine lists them).
    run = trained["model"]
    listed = cb.get(f"training_runs/{run}/checkpoints").json()["checkpoints"]
    assert sorted(x["checkpoint_id"] for x in listed) == ["sampler_weights/step-1", "weights/step-1"]
    assert cb.get(f"training_runs/{run}").json()["base_model"] == "tiny-qwen3"
    # An imported checkpoint is served by B's own archive route, the same files again.
    again = members(archive(cb, trained["sampler"]))
    assert again == members(trained["sampler_tar"])


def test_imports_are_idempotent_and_conflicts_409(engines, trained):
    _, b, _ = engines
    cb = Client(b.url, api_key=KEY_B)
    import_tar(cb, trained["sampler"], trained["sampler_tar"])  # (whether or not the test above ran)
    before = store_files(b.data_dir)
    # (c) The same bytes again, or the same checkpoint archived anew: nothing to do.
    for tar in (trained["sampler_tar"], archive(Client(engines[0].url), trained["sampler"])):
        r = import_tar(cb, trained["sampler"], tar)
        assert r.status == 200 and r.json() == {"tinker_path": trained["sampler"], "imported": False}, r.raw
    # (d) Other content under an existing path: 409, the checkpoint as it was.
    r = import_tar(cb, trained["sampler"], trained["later_tar"])
    assert r.status == 409 and "already exists" in r.json()["detail"], r.raw
    assert store_files(b.data_dir) == before
    # Under its own path it imports; a run's checkpoints must share base model and rank.
    assert import_tar(cb, trained["later"], trained["later_tar"]).json()["imported"] is True
    assert sample(cb, trained["later"]) == sample(Client(engines[0].url), trained["later"])


def test_a_hosted_style_archive_without_engine_metadata_is_reconstructed(engines, trained):
    """No tinker_engine_checkpoint.json (as a hosted archive): base model, rank and which layers are
    trained come from the PEFT files; a LoRA on attention only must come back as such."""
    a, b, _ = engines
    ca, cb = Client(a.url), Client(b.url, api_key=KEY_B)
    created = ca.ok("create_model", {"session_id": ca.session(), "model_seq_id": 0, "base_model": "tiny-qwen3",
                                     "lora_config": {"rank": 2, "seed": 4, "train_mlp": False, "train_unembed": False}})
    ca.done(created["request_id"])
    model = created["model_id"]
    ca.forward_backward(model, 1, DATA)
    ca.optim_step(model, 2, lr=5e-2)
    path = ca.done(ca.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 3, "path": "attn"})[
        "request_id"])["path"]
    files = members(archive(ca, path))
    hosted = build_tar([(n, files[n]) for n in ("adapter_config.json", "adapter_model.safetensors", "checkpoint_complete")])
    r = import_tar(cb, path, hosted, "&ttl_seconds=3600")
    assert r.status == 200 and r.json()["imported"] is True, r.raw
    info = cb.ok("weights_info", {"tinker_path": path})
    assert info == ca.ok("weights_info", {"tinker_path": path})
    assert (info["lora_rank"], info["train_attn"], info["train_mlp"], info["train_unembed"]) == (2, True, False, False)
    assert sample(cb, path) == sample(ca, path)
    listed = cb.get(f"training_runs/{model}/checkpoints").json()["checkpoints"]
    assert [x["tinker_path"] for x in listed] == [path] and listed[0]["expires_at"] is not None
    # A run's checkpoints share base model and LoRA rank: this one (rank 2) under the rank-4 run: 409.
    import_tar(cb, trained["sampler"], trained["sampler_tar"])
    r = import_tar(cb, f"tinker://{trained['model']}/sampler_weights/other-rank", hosted)
    assert r.status == 409 and "rank" in r.json()["detail"], r.raw
    # Deleted like any checkpoint; importing it again brings it back.
    run, kind, name = path[len("tinker://"):].split("/")
    assert cb.request("DELETE", f"training_runs/{run}/checkpoints/{kind}/{name}").status == 204
    assert cb.post("weights_info", {"tinker_path": path}).status == 404
    assert import_tar(cb, path, hosted).json()["imported"] is True


def hostile_archives(good: dict, state: dict) -> list:
    """(label, query path suffix kind, tar bytes, expected status, words the detail must hold)."""
    cfg, adapter = good["adapter_config.json"], good["adapter_model.safetensors"]
    meta = good["tinker_engine_checkpoint.json"]
    ok = [("adapter_config.json", cfg), ("adapter_model.safetensors", adapter), ("checkpoint_complete", b"")]

    def link(kind, target):
        info = tarfile.TarInfo()
        info.type, info.linkname = kind, target
        return info

    folder = tarfile.TarInfo()
    folder.type = tarfile.DIRTYPE
    unknown_cfg = json.dumps({**json.loads(cfg), "base_model_name_or_path": "no-such-model"}).encode()
    llama_meta = json.dumps({**json.loads(meta), "base_model": "tiny-llama3"}).encode()
    llama_cfg = json.dumps({**json.loads(cfg), "base_model_name_or_path": "tiny-llama3"}).encode()
    whole = build_tar(ok)
    cut = whole.index(adapter[:64]) + len(adapter) // 2
    return [
        ("path traversal", "sampler_weights", build_tar(ok + [("../../escape.json", b"{}")]), 400, "unexpected member"),
        ("absolute path", "sampler_weights", build_tar([("/tmp/adapter_config.json", cfg)] + ok[1:]), 400, "unexpected member"),
        ("symlink", "sampler_weights", build_tar(ok[:1] + [("adapter_model.safetensors", link(tarfile.SYMTYPE, "/etc/passwd"))]
                                                 + ok[2:]), 400, "not a regular file"),
        ("hard link", "sampler_weights", build_tar(ok[:1] + [("adapter_model.safetensors", link(tarfile.LNKTYPE, "adapter_config.json"))]
                                                   + ok[2:]), 400, "not a regular file"),
        ("folder", "sampler_weights", build_tar([("adapter_config.json", folder)] + ok[1:]), 400, "not a regular file"),
        ("extra member", "sampler_weights", build_tar(ok + [("notes.txt", b"hi")]), 400, "unexpected member"),
        ("duplicate member", "sampler_weights", build_tar(ok + [("adapter_config.json", cfg)]), 400, "twice"),
        ("missing marker", "sampler_weights", build_tar(ok[:2]), 400, "checkpoint_complete"),
        ("missing adapter", "sampler_weights", build_tar([ok[0], ok[2]]), 400, "adapter_model.safetensors"),
        ("truncated", "sampler_weights", whole[:cut], 400, "truncated"),
        ("not a tar", "sampler_weights", b"\x00garbage" * 200, 400, "tar"),
        ("empty body", "sampler_weights", b"", 400, "tar"),
        ("unreadable safetensors", "sampler_weights",
         build_tar([ok[0], ("adapter_model.safetensors", b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}"), ok[2]]), 400,
         "not a readable safetensors"),
        ("unknown base model", "sampler_weights", build_tar([("adapter_config.json", unknown_cfg)] + ok[1:]), 400,
         "no-such-model"),
        ("another base model's shapes", "sampler_weights",
         build_tar([("adapter_config.json", llama_cfg), ok[1], ("tinker_engine_checkpoint.json", llama_meta), ok[2]]), 400,
         "tiny-llama3"),
        ("another lora_alpha", "sampler_weights",
         build_tar([("adapter_config.json", json.dumps({**json.loads(cfg), "lora_alpha": 16}).encode())] + ok[1:]), 400,
         "lora_alpha"),
        ("sampler archive under a weights path", "weights", whole, 400, "optimizer"),
        ("weights archive under a sampler path", "sampler_weights", build_tar(list(state.items())), 400, "unexpected member"),
        ("optimizer state of another shape", "weights",
         build_tar([(n, state["adapter_model.safetensors"] if n == "optimizer.safetensors" else d) for n, d in state.items()]),
         400, "optimizer"),
    ]


def test_hostile_archives_are_refused_and_leave_nothing_behind(engines, trained):
    _, b, _ = engines
    cb = Client(b.url, api_key=KEY_B)
    before = store_files(b.data_dir)
    good, state = members(trained["sampler_tar"]), members(trained["state_tar"])
    for i, (label, kind, tar, status, words) in enumerate(hostile_archives(good, state)):
        r = import_tar(cb, f"tinker://evil-run/{kind}/x{i}", tar)
        assert r.status == status and words in r.json()["detail"], (label, r.status, r.raw[:400])
    # Bad query strings and encodings.
    for query in ("", "?tinker_path=nope", "?tinker_path=tinker://r/other/x", "?tinker_path=tinker://r/weights/a%2Fb",
                  "?tinker_path=tinker://r/weights/a&tinker_path=tinker://r/weights/b",
                  "?tinker_path=tinker://r/weights/a&ttl_seconds=soon"):
        r = cb.request("POST", "import_checkpoint" + query, raw=trained["sampler_tar"], content_type="application/x-tar")
        assert r.status == 400, (query, r.raw)
    r = cb.request("POST", "import_checkpoint?tinker_path=tinker://evil-run/sampler_weights/gz", raw=trained["sampler_tar"],
                   content_type="application/x-tar", headers={"Content-Encoding": "gzip"})
    assert r.status == 400
    # Over the import's own limit: 413 naming it.
    r = import_tar(cb, "tinker://evil-run/sampler_weights/big", b"\x00" * ((MAX_IMPORT_MB << 20) + 1))
    assert r.status == 413 and "--max-import-mb" in r.json()["detail"], r.raw[:300]
    # Nothing written: no run, no checkpoint, no leftover upload; the engine still serves.
    assert store_files(b.data_dir) == before
    assert not (b.data_dir / "runs" / "evil-run").exists()
    assert not any((b.data_dir / ".imports").iterdir())
    assert cb.get("training_runs/evil-run").status == 404
    assert all("evil-run" not in x["tinker_path"] for x in cb.get("checkpoints").json()["checkpoints"])
    assert cb.get("healthz").status == 200
    log = b.log_path.read_text(errors="replace")
    assert "Traceback" not in log and "unhandled error" not in log, log[-3000:]


def test_the_import_route_needs_the_key(engines, trained):
    """(The key is checked before the upload is read: a small body here, as a client whose upload is
    refused unread sees the connection closed mid-send.)"""
    _, b, _ = engines
    tar = build_tar([(n, d) for n, d in members(trained["sampler_tar"]).items() if n != "adapter_model.safetensors"])
    for key in (None, "tml-wrong", KEY_B[:-1]):
        r = import_tar(Client(b.url, api_key=key), "tinker://keyless/sampler_weights/x", tar)
        assert r.status == 401, r.raw
    assert not (b.data_dir / "runs" / "keyless").exists()


# ------------------------------------------------------------------- emulated sampling time


def concurrent_samples(c: Client, sampler: str, seq_ids: list) -> tuple:
    started = time.monotonic()
    ids = [c.ok("asample", sample_body(sampler, s, seed=s))["request_id"] for s in seq_ids]
    results = {}
    threads = [threading.Thread(target=lambda r=r: results.__setitem__(r, c.done(r))) for r in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - started, [results[r] for r in ids]


def test_emulated_sampling_time_holds_slots_and_changes_no_result(engines):
    a, b, c2 = engines
    ca, one, two = Client(a.url), Client(b.url, api_key=KEY_B), Client(c2.url)
    emulated = MS_PER_TOKEN * 2 * 8 / 1000  # 2 samples of 8 tokens each
    assert ca.get("healthz").json()["sample_service_time"] == {"ms_per_token": 0, "slots": 1}
    base = {c: sampler_for(c, base_model="tiny-qwen3") for c in (ca, one, two)}
    reference = [ca.done(ca.ok("asample", sample_body(base[ca], s, seed=s))["request_id"]) for s in (1, 2, 3)]

    for c in (one, two):  # (this also loads the base model: not part of the times compared below)
        started = time.monotonic()
        single = c.done(c.ok("asample", sample_body(base[c], 1, seed=1))["request_id"])
        assert time.monotonic() - started >= emulated
        assert single == reference[0]
    serial, out_one = concurrent_samples(one, base[one], [2, 3])
    overlapped, out_two = concurrent_samples(two, base[two], [2, 3])
    assert out_one == out_two == reference[1:]
    # One slot serves the two requests' emulated time one after the other, two slots at once.
    assert serial >= 2 * emulated, serial
    # (Two slots: the second request's compute runs during the first's hold, then both hold at once.)
    assert overlapped >= emulated and overlapped < serial - emulated / 3, (overlapped, serial)
    h1 = one.get("healthz").json()["sample_service_time"]
    h2 = two.get("healthz").json()["sample_service_time"]
    assert (h1["ms_per_token"], h1["slots"], h1["peak_busy"], h1["busy"], h1["waiting"]) == (MS_PER_TOKEN, 1, 1, 0, 0)
    assert (h2["ms_per_token"], h2["slots"], h2["peak_busy"]) == (MS_PER_TOKEN, 2, 2)
    assert h2["requests"] == 3 and h2["held_ms"] == pytest.approx(3 * emulated * 1000)


@pytest.mark.parametrize(("flags", "message"), [
    (["--sample-ms-per-token", "-1"], "--sample-ms-per-token must be a finite number >= 0"),
    (["--sample-ms-per-token", "nan"], "--sample-ms-per-token must be a finite number >= 0"),
    (["--sample-ms-per-token", "inf"], "--sample-ms-per-token must be a finite number >= 0"),
    (["--sample-slots", "0"], "--sample-slots must be an integer >= 1"),
    (["--sample-slots", "1.5"], "invalid int value"),
    (["--max-import-mb", "0"], "--max-import-mb must be a finite number > 0"),
])
def test_flags_are_checked(flags, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse_args(flags)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
    args = parse_args(["--sample-ms-per-token", "2.5", "--sample-slots", "3"])
    assert (args.sample_ms_per_token, args.sample_slots) == (2.5, 3)


# --------------------------------------------------------------------- the layout the check uses


@pytest.mark.parametrize("base_model", ["tiny-qwen3", "tiny-llama3"])
def test_expected_adapter_layout_is_what_peft_saves(base_model):
    """The import checks tensors against keys and shapes it derives from the base model's layers; they
    must be exactly those lora.adapter_state gives, for every choice of trained layers."""
    spec = ModelRegistry().resolve(base_model)
    layout = imp.skeleton_layout(spec, None)
    base = BaseModelCache(torch.device("cpu"), torch.float32).model(spec)
    for flags in imp.FLAG_COMBINATIONS:
        lora = LoraSpec(rank=3, train_attn=flags[0], train_mlp=flags[1], train_unembed=flags[2])
        peft = attach_lora(instance_sharing_weights(base), lora)
        saved = {k: tuple(v.shape) for k, v in adapter_state(peft).items()}
        assert imp.expected_adapter(layout, layout["targets"][flags], 3) == saved, flags
        params = {n: tuple(p.shape) for n, p in peft.named_parameters() if p.requires_grad}
        assert imp.expected_params(layout, layout["targets"][flags], 3) == params, flags
