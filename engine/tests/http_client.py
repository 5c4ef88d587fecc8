"""A minimal raw-HTTP client for the engine (what the tests use besides the official SDK)."""

import json
import time
import urllib.error
import urllib.request

API_KEY = "tml-test"


class Response:
    def __init__(self, status, body: bytes, headers):
        self.status = status
        self.raw = body
        self.headers = headers

    def json(self):
        return json.loads(self.raw)


class Client:
    def __init__(self, url: str, api_key: str | None = API_KEY):
        self.url = url.rstrip("/") + "/api/v1/"
        self.api_key = api_key

    def request(self, method, path, body=None, raw: bytes | None = None, content_type="application/json",
                headers=None) -> Response:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        h = {"Content-Type": content_type, **(headers or {})}
        if self.api_key is not None:
            h["X-API-Key"] = self.api_key
        req = urllib.request.Request(self.url + path, data=data, headers=h, method=method)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return Response(r.status, r.read(), r.headers)
        except urllib.error.HTTPError as e:
            return Response(e.code, e.read(), e.headers)

    def post(self, path, body=None, **kw) -> Response:
        return self.request("POST", path, body, **kw)

    def get(self, path) -> Response:
        return self.request("GET", path)

    def ok(self, path, body=None, **kw) -> dict:
        r = self.post(path, body, **kw)
        assert r.status == 200, f"{path}: {r.status} {r.raw[:500]!r}"
        return r.json()

    def result(self, request_id: str, timeout: float = 300) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            r = self.post("retrieve_future", {"request_id": request_id, "allow_metadata_only": False})
            if r.status == 408:
                continue
            assert r.status == 200, f"retrieve_future: {r.status} {r.raw[:500]!r}"
            return r.json()
        raise TimeoutError(request_id)

    def done(self, request_id: str) -> dict:
        out = self.result(request_id)
        assert "error" not in out, out
        return out

    # conveniences -------------------------------------------------------------------

    def session(self) -> str:
        return self.ok("create_session", {"tags": [], "user_metadata": {}, "sdk_version": "tests"})["session_id"]

    def create_model(self, session_id, model_seq_id=0, base_model="tiny-qwen3", rank=4, seed=0) -> str:
        f = self.ok("create_model", {
            "session_id": session_id, "model_seq_id": model_seq_id, "base_model": base_model,
            "lora_config": {"rank": rank, "seed": seed},
        })
        self.done(f["request_id"])
        return f["model_id"]

    def submit_fb(self, model_id, seq_id, data, loss_fn="cross_entropy", forward_only=False, config=None) -> Response:
        return self.post("forward_backward", {
            "model_id": model_id, "seq_id": seq_id, "forward_only": forward_only,
            "forward_backward_input": {"data": data, "loss_fn": loss_fn, "loss_fn_config": config},
        })

    def forward_backward(self, model_id, seq_id, data, **kw) -> dict:
        r = self.submit_fb(model_id, seq_id, data, **kw)
        assert r.status == 200, r.raw
        return self.done(r.json()["request_id"])

    def forward_logprobs(self, model_id, seq_id, data) -> list:
        out = self.forward_backward(model_id, seq_id, data, forward_only=True)
        return [o["logprobs"]["data"] for o in out["loss_fn_outputs"]]

    def optim_step(self, model_id, seq_id, lr=1e-2, **adam) -> dict:
        f = self.ok("optim_step", {"model_id": model_id, "seq_id": seq_id,
                                   "adam_params": {"learning_rate": lr, **adam}})
        return self.done(f["request_id"])


def datum(tokens, weights=None, **extra):
    targets = tokens[1:]
    inputs = {
        "target_tokens": {"data": targets, "dtype": "int64", "shape": [len(targets)]},
        "weights": {"data": weights or [1.0] * len(targets), "dtype": "float32", "shape": [len(targets)]},
    }
    for key, values in extra.items():
        inputs[key] = {"data": values, "dtype": "float32", "shape": [len(values)]}
    return {"model_input": {"chunks": [{"type": "encoded_text", "tokens": tokens[:-1]}]}, "loss_fn_inputs": inputs}


def corpus(n=3, length=24, offset=500):
    return [[offset + (i * 11 + j * 3) % 97 for j in range(length)] for i in range(n)]


def greedy_load_beside_training(c: "Client", prompts: list, seeded: int = 0):
    """Concurrent greedy sample requests of varied lengths and sample counts on a fresh model's
    sampler, with a training step submitted while they decode; then `seeded` identical seeded
    requests. Returns (greedy sequences per request, seeded sequences per request)."""
    sid = c.session()
    model = c.create_model(sid, 0, seed=7)
    sampler = c.done(c.ok("save_weights_for_sampler", {
        "model_id": model, "seq_id": 1, "sampling_session_seq_id": 0})["request_id"])["sampling_session_id"]
    ids = []
    for i, prompt in enumerate(prompts):
        ids.append(c.ok("asample", {
            "sampling_session_id": sampler, "seq_id": i, "num_samples": 1 + i % 3,
            "prompt": {"chunks": [{"tokens": prompt[: 5 + 4 * i]}]},
            "sampling_params": {"max_tokens": 6 + 5 * i, "temperature": 0.0},
        })["request_id"])
        if i == 2:  # a training step while samples decode
            c.forward_backward(model, 2, [datum(s) for s in corpus(2)])
    seeded_ids = [c.ok("asample", {
        "sampling_session_id": sampler, "seq_id": 100 + k, "num_samples": 2,
        "prompt": {"chunks": [{"tokens": prompts[0][:9]}]}, "sampling_params": {"max_tokens": 7, "seed": 11},
    })["request_id"] for k in range(seeded)]
    return [c.done(r)["sequences"] for r in ids], [c.done(r)["sequences"] for r in seeded_ids]


def side_by_side(clients: dict, fn) -> dict:
    """fn(client) for every client at the same time (one thread each); results by key."""
    import threading

    out = {}
    threads = [threading.Thread(target=lambda k=k, c=c: out.__setitem__(k, fn(c))) for k, c in clients.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out
