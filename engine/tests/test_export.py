"""Weights out: the checkpoint archive route (signed download of the checkpoint's files) and the
converter to a PEFT adapter folder / a merged Hugging Face checkpoint, checked by loading both
exports with transformers / peft and comparing logprobs with the engine's own."""

import io
import json
import math
import tarfile
import urllib.error
import urllib.request
from urllib.parse import urlparse, urlunparse

import pytest
import torch

from http_client import Client, corpus, datum
from tinker_engine.export import ExportError, export

PROMPT = [151644, 872, 198, 9707, 11, 1246, 525, 498, 30, 151645, 198, 151644, 77091, 198]


def trained_sampler_checkpoint(c: Client, seed: int, name: str) -> str:
    sid = c.session()
    model = c.create_model(sid, 0, rank=4, seed=seed)
    c.forward_backward(model, 1, [datum(s) for s in corpus(2)])
    c.optim_step(model, 2, lr=5e-2)
    c.forward_backward(model, 3, [datum(s) for s in corpus(2, offset=900)])
    c.optim_step(model, 4, lr=5e-2)
    out = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 5, "path": name})["request_id"])
    return out["path"]


def engine_prompt_logprobs(c: Client, path: str, tokens: list) -> list:
    sampler = c.ok("create_sampling_session", {"session_id": c.session(), "sampling_session_seq_id": 0,
                                               "model_path": path})["sampling_session_id"]
    body = {"sampling_session_id": sampler, "seq_id": 0, "num_samples": 1, "prompt": {"chunks": [{"tokens": tokens}]},
            "sampling_params": {"max_tokens": 1, "seed": 0}, "prompt_logprobs": True}
    return c.done(c.ok("asample", body)["request_id"])["prompt_logprobs"]


def hf_prompt_logprobs(model, tokens: list) -> list:
    with torch.no_grad():
        logits = model(torch.tensor([tokens])).logits[0].float()
    lp = torch.log_softmax(logits, dim=-1)
    return [None] + [lp[i - 1, tokens[i]].item() for i in range(1, len(tokens))]


def archive_url(c: Client, path: str) -> str:
    run, kind, name = path[len("tinker://"):].split("/")
    r = c.get(f"training_runs/{run}/checkpoints/{kind}/{name}/archive")
    assert r.status == 200, r.raw
    body = r.json()
    assert set(body) == {"url", "expires"}
    return body["url"]


def download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as r:  # no API key: the URL is signed
        assert r.headers["Content-Type"] == "application/x-tar"
        return r.read()


@pytest.fixture(scope="module")
def checkpoint(engine, tmp_path_factory):
    c = Client(engine.url)
    path = trained_sampler_checkpoint(c, seed=5, name="export-me")
    tar = tmp_path_factory.mktemp("archive") / "ckpt.tar"
    tar.write_bytes(download(archive_url(c, path)))
    return c, path, tar


def test_archive_is_a_signed_tar_of_the_peft_files(checkpoint, engine):
    c, path, tar = checkpoint
    with tarfile.open(tar) as t:
        names = sorted(t.getnames())
        config = json.loads(t.extractfile("adapter_config.json").read())
    assert names == ["adapter_config.json", "adapter_model.safetensors", "checkpoint_complete",
                     "tinker_engine_checkpoint.json"]
    assert config["r"] == 4 and config["base_model_name_or_path"] == "tiny-qwen3"

    url = archive_url(c, path)
    parts = urlparse(url)
    forged = urlunparse(parts._replace(query=parts.query.replace("signature=", "signature=0")))
    with pytest.raises(urllib.error.HTTPError) as e:
        download(forged)
    assert e.value.code == 403 and b"invalid signature" in e.value.read()
    expired = urlunparse(parts._replace(query="expires=1&" + parts.query.split("&", 1)[1]))
    with pytest.raises(urllib.error.HTTPError) as e:
        download(expired)
    assert e.value.code == 403

    run = path[len("tinker://"):].split("/")[0]
    missing = c.get(f"training_runs/{run}/checkpoints/sampler_weights/no-such/archive")
    assert missing.status == 404 and "not found" in missing.json()["detail"]
    # the archive route itself wants the API key, as every protocol route
    assert Client(engine.url, api_key=None).get(f"training_runs/{run}/checkpoints/sampler_weights/export-me/archive").status == 401


def test_training_checkpoint_archive_carries_the_optimizer_state(engine):
    c = Client(engine.url)
    sid = c.session()
    model = c.create_model(sid, 0, rank=2, seed=1)
    c.forward_backward(model, 1, [datum(s) for s in corpus(1)])
    c.optim_step(model, 2)
    path = c.done(c.ok("save_weights", {"model_id": model, "seq_id": 3, "path": "train-state"})["request_id"])["path"]
    with tarfile.open(fileobj=io.BytesIO(download(archive_url(c, path)))) as t:
        assert sorted(t.getnames()) == ["adapter_config.json", "adapter_model.safetensors", "checkpoint_complete",
                                        "optimizer.json", "optimizer.safetensors", "tinker_engine_checkpoint.json"]
        assert t.getnames()[-1] == "checkpoint_complete"  # written last: a tar cut short lacks it
        meta = json.loads(t.extractfile("tinker_engine_checkpoint.json").read())
    assert meta == {"format": 1, "base_model": "tiny-qwen3", "checkpoint_type": "training", "time": meta["time"],
                    "lora": {"rank": 2, "seed": 1, "train_attn": True, "train_mlp": True, "train_unembed": True}}


def close(a: list, b: list, tol: float = 2e-4) -> float:
    assert len(a) == len(b)
    assert a[0] is None and b[0] is None
    worst = max(abs(x - y) for x, y in zip(a[1:], b[1:]))
    assert worst < tol, f"max |Δ logprob| {worst}"
    return worst


def test_peft_export_loads_in_peft_and_matches_the_engine(checkpoint, tmp_path):
    from peft import PeftModel
    from tinker_engine.base_models import BUILTIN_MODELS, BaseModelCache

    c, path, tar = checkpoint
    out = tmp_path / "peft"
    files = export(tar, from_archive=True, fmt="peft", out=out)
    assert files == ["adapter_config.json", "adapter_model.safetensors"]
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "tiny-qwen3"
    assert config["r"] == 4 and config["lora_alpha"] == 32 and config["task_type"] == "CAUSAL_LM"
    assert config["target_modules"] == sorted(["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                               "down_proj", "lm_head"])

    base = BaseModelCache(torch.device("cpu"), torch.float32)._load(BUILTIN_MODELS["tiny-qwen3"]())
    engine_lps = engine_prompt_logprobs(c, path, PROMPT)
    base_lps = hf_prompt_logprobs(base, PROMPT)
    # the adapter is trained (non-zero): without it the logprobs are clearly different
    assert max(abs(x - y) for x, y in zip(base_lps[1:], engine_lps[1:])) > 1e-2
    model = PeftModel.from_pretrained(base, str(out))
    model.eval()
    close(hf_prompt_logprobs(model, PROMPT), engine_lps)


def test_merged_export_loads_in_transformers_offline_and_matches_the_engine(checkpoint, tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    c, path, tar = checkpoint
    out = tmp_path / "merged"
    out.mkdir()  # an existing empty directory is fine
    files = export(tar, from_archive=True, fmt="merged", out=out)
    assert {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json"} <= set(files)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = AutoModelForCausalLM.from_pretrained(str(out), local_files_only=True)
    model.eval()
    assert model.lm_head.weight.data_ptr() != model.get_input_embeddings().weight.data_ptr()
    ours = hf_prompt_logprobs(model, PROMPT)
    close(ours, engine_prompt_logprobs(c, path, PROMPT))
    assert all(math.isfinite(x) for x in ours[1:])
    assert GenerationConfig.from_pretrained(str(out)).eos_token_id == [151645, 151643]
    tok = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert tok.decode([151645]) == "<|im_end|>"


def test_bad_input_is_named_and_leaves_nothing(checkpoint, tmp_path):
    _, _, tar = checkpoint
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("keep")
    with pytest.raises(ExportError, match=f"--out {taken} is a non-empty directory"):
        export(tar, from_archive=True, fmt="peft", out=taken)
    with pytest.raises(ExportError, match="--format 'gguf' is not supported; use one of: peft, merged"):
        export(tar, from_archive=True, fmt="gguf", out=tmp_path / "a")
    with pytest.raises(ExportError, match="archive .*nope.tar not found"):
        export(tmp_path / "nope.tar", from_archive=True, fmt="peft", out=tmp_path / "b")
    with pytest.raises(ExportError, match="is neither a built-in model nor a local Hugging Face folder"):
        export(tar, from_archive=True, fmt="merged", out=tmp_path / "c", base_model="Qwen/Qwen3-8B")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert [p.name for p in taken.iterdir()] == ["x"]
