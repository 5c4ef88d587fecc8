"""get_server_capabilities carries each served model's real shape (for `cookbook models`), in fields
the official SDK ignores: the built-in tiny models and a local checkpoint directory alike."""

import json
import os
import subprocess

import pytest

from http_client import Client
from sdk_env import sdk_python


def served(engine) -> dict:
    r = Client(engine.url).get("get_server_capabilities")
    assert r.status == 200, r.raw[:500]
    return {m["model_name"]: m for m in r.json()["supported_models"]}


def test_builtin_models_report_their_own_shape_not_the_model_they_stand_in_for(engine):
    from tinker_engine.base_models import BUILTIN_MODELS, model_class

    models = served(engine)
    for name, make in BUILTIN_MODELS.items():
        config = make().config
        text = config.get_text_config()  # (the config itself for a text-only model)
        built = model_class(config).from_config(config)  # a real instance, counted apart from the engine
        m = models[name]
        assert m["source"] == "builtin"
        assert m["num_hidden_layers"] == text.num_hidden_layers == len(built.get_decoder().layers)
        assert m["hidden_size"] == text.hidden_size == built.get_input_embeddings().embedding_dim
        assert m["vocab_size"] == built.get_input_embeddings().num_embeddings
        assert m["num_parameters"] == sum(p.numel() for p in built.parameters())  # the vision tower's too
        assert m["max_context_length"] == text.max_position_embeddings
        assert ("images" in m) == (name == "tiny-qwen3-vl")
    assert models["tiny-qwen3"]["tokenizer_id"] == "Qwen/Qwen3-8B"
    # healthz lists the same models (what the CLI's readiness checks read).
    health = Client(engine.url).get("healthz").json()
    assert {m["model_name"]: m for m in health["supported_models"]} == models


@pytest.fixture(scope="module")
def checkpoint_dir(tmp_path_factory):
    """A small Llama checkpoint saved by transformers, with untied embeddings (both matrices on disk)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    directory = tmp_path_factory.mktemp("mini-llama")
    config = LlamaConfig(vocab_size=300, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    model.save_pretrained(directory)
    return directory, sum(p.numel() for p in model.parameters())


def test_a_checkpoint_directory_reports_the_shape_of_its_files(fresh_engine, tmp_path, checkpoint_dir):
    directory, parameters = checkpoint_dir
    engine = fresh_engine(tmp_path / "data", "--model", f"mini={directory}")
    m = served(engine)["mini"]
    assert m["source"] == "checkpoint" and m["checkpoint_dir"] == str(directory)
    assert (m["arch"], m["num_hidden_layers"], m["hidden_size"], m["vocab_size"]) == ("llama", 3, 32, 300)
    assert m["num_parameters"] == parameters
    assert m["max_context_length"] == 512


@pytest.mark.parametrize("version", ["0.38.0", pytest.param("0.25.0", marks=pytest.mark.full), pytest.param("0.16.1", marks=pytest.mark.full)])
def test_the_official_sdk_parses_the_capabilities_with_the_shape_fields(engine, version):
    script = (
        "import json, sys, tinker\n"
        "caps = tinker.ServiceClient(base_url=sys.argv[1], api_key='tml-conformance').get_server_capabilities()\n"
        "print(json.dumps([m.model_name for m in caps.supported_models]))\n"
    )
    env = {**os.environ, "TINKER_TELEMETRY": "0"}
    env.pop("TINKER_BASE_URL", None)
    proc = subprocess.run([str(sdk_python(version)), "-c", script, engine.url], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == list(served(engine))
