"""SDK 0.38's scoring options of asample over HTTP: topk_sample_logprobs, target_prompt_logprobs
(dense and sparse CSR), prompt_alt_tokens_k; each value checked against the engine's own prompt
logprobs of a full forward over the same tokens, not against itself."""

import numpy as np
import pytest

from http_client import Client, corpus, datum

PROMPT = [500 + (j * 7) % 61 for j in range(9)]


@pytest.fixture(scope="module")
def sampler(engine):
    """A sampler on LoRA weights that one training step moved away from the base model."""
    c = Client(engine.url)
    model = c.create_model(c.session(), 0, seed=5)
    c.forward_backward(model, 1, [datum(t) for t in corpus(2)])
    c.optim_step(model, 2, lr=5e-2)
    out = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 3, "sampling_session_seq_id": 0})["request_id"])
    return c, out["sampling_session_id"], iter(range(10_000))


def sample(sampler, prompt, **options):
    c, sid, seq = sampler
    body = {"sampling_session_id": sid, "seq_id": next(seq), "num_samples": options.pop("num_samples", 1),
            "prompt": {"chunks": [{"type": "encoded_text", "tokens": prompt}]},
            "sampling_params": options.pop("sampling_params", {"max_tokens": 1, "seed": 0}), **options}
    r = c.post("asample", body)
    return r if r.status != 200 else c.done(r.json()["request_id"])


def scored(sampler, tokens, k=0):
    """The prompt logprobs (and top-k rows) of a full forward over `tokens`."""
    out = sample(sampler, tokens, prompt_logprobs=True, topk_prompt_logprobs=k)
    return out["prompt_logprobs"], out["topk_prompt_logprobs"]


def test_topk_sample_logprobs_are_those_of_a_full_forward(sampler):
    out = sample(sampler, PROMPT, num_samples=2, topk_sample_logprobs=3,
                 sampling_params={"max_tokens": 5, "seed": 4, "stop": []})
    for seq in out["sequences"]:
        rows = seq["topk_logprobs"]
        assert len(rows) == len(seq["tokens"]) == 5 and all(len(row) == 3 for row in rows)
        _, full_topk = scored(sampler, PROMPT + seq["tokens"], k=3)
        for t, row in enumerate(rows):
            expected = full_topk[len(PROMPT) + t]
            assert [tok for tok, _ in row] == [tok for tok, _ in expected]
            assert np.allclose([v for _, v in row], [v for _, v in expected], atol=1e-4)
            assert row[0][1] >= seq["logprobs"][t] - 1e-5  # nothing beats the top-1
            for tok, v in row:
                if tok == seq["tokens"][t]:
                    assert abs(v - seq["logprobs"][t]) < 1e-4


def test_target_prompt_logprobs_dense(sampler):
    n = len(PROMPT)
    other = [700 + i for i in range(n - 1)]
    ids = [[PROMPT[i + 1], other[i], -1] for i in range(n - 1)]
    out = sample(sampler, PROMPT, target_prompt_logprobs={"data": sum(ids, []), "dtype": "int64", "shape": [n - 1, 3]})
    t = out["target_prompt_logprobs"]
    assert t["dtype"] == "float32" and t["shape"] == [n - 1, 3] and "sparse_crow_indices" not in t
    values = np.asarray(t["data"]).reshape(n - 1, 3)
    actual, _ = scored(sampler, PROMPT)
    assert np.allclose(values[:, 0], actual[1:], atol=1e-4)  # the prompt's own tokens
    assert np.all(values[:, 2] == 0.0)  # -1 asks for nothing
    for i in (0, 3, n - 2):  # another token at position i + 1: score the prompt with it swapped in
        swapped = PROMPT[: i + 1] + [other[i]] + PROMPT[i + 2 :]
        assert abs(values[i, 1] - scored(sampler, swapped)[0][i + 1]) < 1e-4


def test_target_prompt_logprobs_sparse_keeps_the_layout(sampler):
    n = len(PROMPT)
    # Row 2 names ids in columns 0 and 3, row 5 in column 1; the other cells are left out.
    col, data = [0, 3, 1], [PROMPT[3], 640, PROMPT[6]]
    target = {"data": data, "dtype": "int64", "shape": [n - 1, 4],
              "sparse_crow_indices": [0, 0, 0, 2, 2, 2, 3, 3, 3], "sparse_col_indices": col}
    out = sample(sampler, PROMPT, target_prompt_logprobs=target)["target_prompt_logprobs"]
    assert out["shape"] == [n - 1, 4]
    assert out["sparse_crow_indices"] == target["sparse_crow_indices"] and out["sparse_col_indices"] == col
    actual, _ = scored(sampler, PROMPT)
    swapped = PROMPT[:3] + [640] + PROMPT[4:]
    expected = [actual[3], scored(sampler, swapped)[0][3], actual[6]]
    assert np.allclose(out["data"], expected, atol=1e-4)


def test_prompt_alt_tokens(sampler):
    n = len(PROMPT)
    params = {"max_tokens": 1, "seed": 9, "temperature": 1.0}
    out = sample(sampler, PROMPT, prompt_alt_tokens_k=4, sampling_params=params)["prompt_alt_tokens"]
    assert out["tokens"]["shape"] == out["logprobs"]["shape"] == [n - 1, 4]
    assert out["tokens"]["dtype"] == "int64" and out["logprobs"]["dtype"] == "float32"
    tokens = np.asarray(out["tokens"]["data"]).reshape(n - 1, 4)
    logprobs = np.asarray(out["logprobs"]["data"]).reshape(n - 1, 4)
    assert len(np.unique(tokens)) > 1, "draws at temperature 1 from an untrained-ish model vary"
    for i in (0, n // 2, n - 2):
        for j in (0, 3):
            swapped = PROMPT[: i + 1] + [int(tokens[i, j])] + PROMPT[i + 2 :]
            assert abs(logprobs[i, j] - scored(sampler, swapped)[0][i + 1]) < 1e-4
    again = sample(sampler, PROMPT, prompt_alt_tokens_k=4, sampling_params=params)["prompt_alt_tokens"]
    assert again["tokens"]["data"] == out["tokens"]["data"], "the same seed draws the same alternatives"

    greedy = sample(sampler, PROMPT, prompt_alt_tokens_k=2, sampling_params={"max_tokens": 1, "temperature": 0.0})
    _, top1 = scored(sampler, PROMPT, k=1)
    drawn = np.asarray(greedy["prompt_alt_tokens"]["tokens"]["data"]).reshape(n - 1, 2)
    assert drawn[:, 0].tolist() == drawn[:, 1].tolist() == [row[0][0] for row in top1[1:]]


def test_scoring_options_need_no_last_n_and_combine(sampler):
    n = len(PROMPT)
    ids = {"data": [PROMPT[i + 1] for i in range(n - 1)], "dtype": "int64", "shape": [n - 1, 1]}
    out = sample(sampler, PROMPT, prompt_logprobs=True, prompt_logprobs_last_n=2, target_prompt_logprobs=ids,
                 prompt_alt_tokens_k=1, topk_sample_logprobs=2)
    assert out["prompt_logprobs"][: n - 2] == [None] * (n - 2)
    assert len(out["target_prompt_logprobs"]["data"]) == n - 1, "last_n does not cut the target rows"
    assert out["prompt_alt_tokens"]["tokens"]["shape"] == [n - 1, 1]
    assert len(out["sequences"][0]["topk_logprobs"]) == 1


@pytest.mark.parametrize("options,words", [
    ({"topk_sample_logprobs": -1}, "topk_sample_logprobs must be between"),
    ({"topk_sample_logprobs": 5000}, "topk_sample_logprobs must be between"),
    ({"prompt_alt_tokens_k": -2}, "prompt_alt_tokens_k must be between"),
    ({"target_prompt_logprobs": {"data": [1, 2], "dtype": "int64", "shape": [2, 1]}}, "needs 8"),
    ({"target_prompt_logprobs": {"data": [-1] * 8, "dtype": "int64", "shape": [8, 1]}}, "names no token id"),
    ({"target_prompt_logprobs": {"data": [10**9] * 8, "dtype": "int64", "shape": [8, 1]}}, "outside the vocabulary"),
    ({"target_prompt_logprobs": {"data": [1.5] * 8, "dtype": "float32", "shape": [8, 1]}}, "must be 'int64'"),
    ({"target_prompt_logprobs": {"data": [1] * 8, "dtype": "int64", "shape": [8]}}, "shape must be"),
    ({"target_prompt_logprobs": {"data": [3], "dtype": "int64", "shape": [8, 2],
                                 "sparse_crow_indices": [0, 1], "sparse_col_indices": [0]}}, "inconsistent sparse"),
])
def test_bad_scoring_options_are_refused_by_name(sampler, options, words):
    r = sample(sampler, PROMPT, **options)
    assert r.status == 400 and words in r.json()["detail"], (r.status, r.raw)


def test_defaults_as_0_38_always_sends_them_are_accepted(sampler):
    out = sample(sampler, PROMPT, topk_sample_logprobs=0, prompt_alt_tokens_k=0, record_stability_info=False)
    assert "topk_logprobs" not in out["sequences"][0] and "prompt_alt_tokens" not in out
