"""The engine runs PyTorch's deterministic algorithms without NaN-filling new memory first
(cli.configure_determinism). That is sound only if no computation reads memory it never wrote:
with the fill on, such a read brings NaN (or an integer's largest value) into the results. So
training, forward passes and both samplers must give bitwise the same results with the fill on
and off, in float32 and in bfloat16 (whose casts allocate most of the filled tensors)."""

import numpy as np
import pytest
import torch

from devices import DEVICES
from http_client import corpus
from tinker_engine.base_models import BaseModelCache, ModelRegistry
from tinker_engine.fast_decode import FastJob, FastSampler
from tinker_engine.lora import LoraSpec
from tinker_engine.losses import resolve_config
from tinker_engine.sampler import SamplingParams, generate
from tinker_engine.trainer import ADAM_DEFAULTS, TrainingModel
from tinker_engine.wire import Datum, ForwardRequest


@pytest.fixture
def deterministic():
    """Deterministic mode as the engine runs it; `fill(on)` switches the NaN fill of new memory."""
    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
              torch.utils.deterministic.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True, warn_only=True)

    def fill(on: bool):
        torch.utils.deterministic.fill_uninitialized_memory = on

    yield fill
    torch.use_deterministic_algorithms(before[0], warn_only=before[1])
    torch.utils.deterministic.fill_uninitialized_memory = before[2]


def rl_data(n: int, length: int, rng: np.random.Generator) -> list:
    out = []
    for tokens in corpus(n, length + 1, offset=300):
        t = np.array(tokens, dtype=np.int64)
        out.append(Datum(t[:-1], {
            "target_tokens": t[1:],
            "logprobs": rng.normal(-2.0, 0.5, length).astype(np.float32),
            "advantages": rng.normal(0.0, 1.0, length).astype(np.float32),
            "sequence_ratio_mask": (np.arange(length) % 3 != 0).astype(np.float32),
        }))
    return out


def everything(device: str, dtype: torch.dtype) -> dict:
    """Every engine computation once, from fresh weights: losses, logprobs, gradients' effect on
    the adapter after clipped Adam steps, reference and fast samples with their logprobs."""
    spec = ModelRegistry().resolve("tiny-qwen3")
    cache = BaseModelCache(torch.device(device), dtype)
    base, tokenizer = cache.model(spec), cache.tokenizer(spec)
    model = TrainingModel(base, spec, LoraSpec(rank=4, seed=5), torch.device(device), max_batch_tokens=64)
    rng = np.random.default_rng(0)
    sl = [Datum(np.array(t[:-1], dtype=np.int64), {"target_tokens": np.array(t[1:], dtype=np.int64),
                                                    "weights": np.linspace(0, 1, len(t) - 1, dtype=np.float32)})
          for t in corpus(3, 21)]
    out = {}
    adam = dict(ADAM_DEFAULTS, learning_rate=1e-2, grad_clip_norm=1.0, weight_decay=0.01)
    for step, (loss_fn, data) in enumerate([("cross_entropy", sl), ("ppo", rl_data(4, 15, rng)),
                                            ("gspo", rl_data(3, 12, rng))]):
        result = model.forward_backward(ForwardRequest(data, loss_fn, resolve_config(loss_fn, {}), False))
        out[f"{step} {loss_fn} loss"] = result["metrics"]["loss:sum"]
        out[f"{step} {loss_fn} logprobs"] = np.concatenate([o["logprobs"] for o in result["loss_fn_outputs"]])
        out[f"{step} grad norm"] = model.optim_step(adam)["unclipped_grad_l2:mean"]
    forward = model.forward_backward(ForwardRequest(sl, "cross_entropy", {}, True))
    out["forward logprobs"] = np.concatenate([o["logprobs"] for o in forward["loss_fn_outputs"]])
    for name, tensor in model.adapter_state().items():
        out[name] = tensor.float().cpu().numpy()

    prompts = [p[:n] for p, n in zip(corpus(3, 30, offset=700), (9, 30, 17))]
    seeded = SamplingParams(max_tokens=10, temperature=1.0, seed=3)
    for i, prompt in enumerate(prompts):
        got = generate(model.peft, prompt, 2, seeded, spec.eos_token_ids, tokenizer, torch.device(device),
                       prompt_logprobs=True)
        out[f"reference {i}"] = (got["prompt_logprobs"], [(s["tokens"], s["logprobs"]) for s in got["sequences"]])

    results = {}
    sampler = FastSampler(device, 1 << 28)
    for i, prompt in enumerate(prompts):  # on the base model's lane, and one on an adapter's
        params = SamplingParams(max_tokens=8 + i, temperature=0.0 if i == 1 else 1.0, seed=i)
        sampler.submit(FastJob(("base",), base, None, prompt, 2, params, spec.eos_token_ids, tokenizer,
                               on_done=lambda r, i=i: results.__setitem__(i, r),
                               on_error=lambda e: pytest.fail(repr(e)), fallback=lambda: pytest.fail("fallback")))
    sampler.submit(FastJob(("snapshot",), base, lambda: model.peft, prompts[2], 3, seeded, spec.eos_token_ids, tokenizer,
                           on_done=lambda r: results.__setitem__("adapted", r),
                           on_error=lambda e: pytest.fail(repr(e)), fallback=lambda: pytest.fail("fallback")))
    for _ in range(200):
        if not sampler:
            break
        sampler.step()
    assert sorted(results, key=str) == sorted([0, 1, 2, "adapted"], key=str)
    for key, r in results.items():
        out[f"fast {key}"] = [(s["tokens"], s["logprobs"]) for s in r["sequences"]]
    return out


def assert_same(a, b, where: str):
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), where
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert np.float64(a).tobytes() == np.float64(b).tobytes(), where  # bitwise, NaN included
    else:
        assert a == b, where


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_results_are_bitwise_the_same_with_new_memory_nan_filled_or_not(deterministic, device, dtype):
    deterministic(True)
    filled = everything(device, dtype)
    deterministic(False)
    unfilled = everything(device, dtype)
    assert filled.keys() == unfilled.keys()
    for key in filled:
        assert_same(filled[key], unfilled[key], key)
    for key, value in filled.items():  # and the filled run read no NaN into a result
        if isinstance(value, np.ndarray):
            assert np.isfinite(value).all(), key
