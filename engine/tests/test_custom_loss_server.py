"""Server-side custom losses (SDK 0.38 create_custom_loss) over HTTP, on an engine started with
--custom-loss-server-side. Graphs are traced with torch.fx here and encoded in the wire format of
the SDK's `CustomLossGraph` (an encoder written from its documented format, below)."""

import math

import numpy as np
import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.node import _get_qualified_name

from conftest import EngineProcess
from http_client import Client, corpus, datum


def _encode_arg(arg):
    if isinstance(arg, torch.fx.Node):
        return {"ref": arg.name}
    if isinstance(arg, float) and not math.isfinite(arg):
        return {"float": str(arg)}
    if arg is None or isinstance(arg, (bool, int, float, str)):
        return arg
    if isinstance(arg, list):
        return [_encode_arg(a) for a in arg]
    if isinstance(arg, tuple):
        return {"tuple": [_encode_arg(a) for a in arg]}
    if isinstance(arg, dict):
        return {"dict": {k: _encode_arg(a) for k, a in arg.items()}}
    if isinstance(arg, slice):
        return {"slice": [_encode_arg(a) for a in (arg.start, arg.stop, arg.step)]}
    if isinstance(arg, torch.dtype):
        return {"dtype": str(arg).removeprefix("torch.")}
    raise TypeError(arg)


def _target(node):
    """As the SDK names a node's target: torch.fx's qualified name, `_operator.` sent as `operator.`."""
    if node.op != "call_function":
        return str(node.target)
    name = _get_qualified_name(node.target)
    return "operator." + name.removeprefix("_operator.") if name.startswith("_operator.") else name


def graph_of(fn) -> dict:
    traced = torch.fx.symbolic_trace(fn)
    return {"format": 1, "nodes": [
        {"op": n.op, "name": n.name, "target": _target(n), "args": [_encode_arg(a) for a in n.args],
         "kwargs": {k: _encode_arg(a) for k, a in n.kwargs.items()}}
        for n in traced.graph.nodes
    ]}


def neg_ll(logprobs, weights):
    loss = -(logprobs * weights).sum()
    return loss, {"custom/neg_ll:sum": loss}


def clipped_ratio(logprobs, old_logprobs, advantages):
    ratio = torch.exp(logprobs - old_logprobs)
    clipped = torch.clamp(ratio, min=0.8, max=1.2)
    loss = -torch.minimum(ratio * advantages, clipped * advantages).sum()
    # softplus is recorded as torch._C._nn.softplus; x.shape[0] as getattr + getitem.
    metrics = {"custom/ratio:mean": ratio.mean(), "custom/tokens:sum": torch.ones_like(logprobs).sum(),
               "custom/softplus:sum": F.softplus(advantages).sum(), "custom/len:sum": logprobs.shape[0] + 0 * ratio.sum()}
    return loss, metrics


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    proc = EngineProcess(tmp_path_factory.mktemp("custom") / "data", "--custom-loss-server-side").start()
    yield Client(proc.url)
    proc.stop()


def create_loss(c: Client, session, seq, fn, inputs):
    r = c.post("create_custom_loss", {"session_id": session, "custom_loss_seq_id": seq, "name": fn.__name__,
                                      "inputs": [{"name": n, "rank": r} for n, r in inputs], "graph": graph_of(fn),
                                      "type": "create_custom_loss"})
    return r


def loss_id_of(c: Client, r) -> str:
    assert r.status == 200, r.raw
    return c.done(r.json()["request_id"])["loss_id"]


def test_client_config_advertises_the_flag(served, engine):
    assert served.ok("client/config", {"sdk_version": "0.38.0"})["custom_loss_server_side"] is True
    assert Client(engine.url).ok("client/config", {"sdk_version": "0.38.0"})["custom_loss_server_side"] is False


def test_neg_ll_trains_exactly_like_cross_entropy(served):
    c = served
    session = c.session()
    loss_id = loss_id_of(c, create_loss(c, session, 0, neg_ll, [("logprobs", 1), ("weights", 1)]))
    assert loss_id == f"{session}:loss:0"
    data = [datum(t, weights=[0.5 + (j % 3) / 2 for j in range(len(t) - 1)]) for t in corpus(3)]
    custom_model, ce_model = c.create_model(session, 0, seed=4), c.create_model(session, 1, seed=4)
    custom = c.forward_backward(custom_model, 1, data, loss_fn="custom", config={"loss_id": loss_id})
    ce = c.forward_backward(ce_model, 1, data)
    assert abs(custom["metrics"]["loss:sum"] - ce["metrics"]["loss:sum"]) < 1e-3
    assert abs(custom["metrics"]["custom/neg_ll:sum"] - ce["metrics"]["loss:sum"]) < 1e-3
    c.optim_step(custom_model, 2, lr=1e-2)
    c.optim_step(ce_model, 2, lr=1e-2)
    after_custom, after_ce = c.forward_logprobs(custom_model, 3, data), c.forward_logprobs(ce_model, 3, data)
    assert max(abs(a - b) for x, y in zip(after_custom, after_ce) for a, b in zip(x, y)) < 1e-5


def test_loss_and_metrics_match_a_float32_reference(served):
    c = served
    session = c.session()
    inputs = [("logprobs", 1), ("old_logprobs", 1), ("advantages", 1)]
    loss_id = loss_id_of(c, create_loss(c, session, 0, clipped_ratio, inputs))
    model = c.create_model(session, 0, seed=2)
    seqs = corpus(2, length=10)
    current = c.forward_logprobs(model, 1, [datum(t) for t in seqs])
    rng = np.random.default_rng(0)
    old = [np.asarray(lp, np.float32) + rng.normal(0, 0.3, len(lp)).astype(np.float32) for lp in current]
    adv = [np.where(np.arange(len(lp)) % 2 == 0, 1.0, -0.5).astype(np.float32) for lp in current]
    data = [datum(t, old_logprobs=o.tolist(), advantages=a.tolist()) for t, o, a in zip(seqs, old, adv)]
    for d in data:
        del d["loss_fn_inputs"]["weights"]
    out = c.forward_backward(model, 2, data, loss_fn="custom", config={"loss_id": loss_id})
    loss, ratios = 0.0, []
    for lp, o, a in zip(current, old, adv):
        ratio = np.exp(np.asarray(lp, np.float32) - o)
        loss += -np.minimum(ratio * a, np.clip(ratio, 0.8, 1.2) * a).sum(dtype=np.float32)
        ratios.append(ratio.mean())
    assert abs(out["metrics"]["loss:sum"] - loss) < 1e-4 * max(1, abs(loss))
    assert abs(out["metrics"]["custom/ratio:mean"] - np.mean(ratios)) < 1e-5
    assert out["metrics"]["custom/tokens:sum"] == out["metrics"]["custom/len:sum"] == sum(len(t) - 1 for t in seqs)
    softplus = sum(np.log1p(np.exp(a)).sum(dtype=np.float32) for a in adv)
    assert abs(out["metrics"]["custom/softplus:sum"] - softplus) < 1e-4


def node(op, name, target, *args, **kwargs):
    return {"op": op, "name": name, "target": target, "args": list(args), "kwargs": kwargs}


def graph(*middle, out="s"):
    return {"format": 1, "nodes": [node("placeholder", "logprobs", "logprobs"), *middle,
                                   node("output", "output", "output", {"tuple": [{"ref": out}, {"dict": {}}]})]}


@pytest.mark.parametrize("bad,words", [
    (graph(node("call_function", "s", "builtins.eval", "1")), "'builtins.eval', which this engine does not allow"),
    (graph(node("call_function", "s", "os.system", "true")), "'os.system'"),
    (graph(node("call_method", "s", "backward", {"ref": "logprobs"})), "method 'backward'"),
    (graph(node("call_method", "s", "numpy", {"ref": "logprobs"})), "method 'numpy'"),
    (graph(node("call_method", "s", "sum", "not a node")), "on something other than a node"),
    (graph(node("get_attr", "s", "weight")), "op 'get_attr'"),
    (graph(node("call_module", "s", "linear", {"ref": "logprobs"})), "op 'call_module'"),
    (graph(node("call_function", "s", "builtins.getattr", {"ref": "logprobs"}, "__class__")), "attribute"),
    (graph(node("call_function", "s", "torch.sum", {"ref": "later"})), "before it is defined"),
    (graph(node("call_function", "s", "torch.sum", {"ref": "logprobs"}), out="nowhere"), "before it is defined"),
    ({"format": 1, "nodes": [node("placeholder", "x", "x"), node("output", "output", "output", {"ref": "x"})]},
     "parameters ['x'] do not match"),
    (graph(node("call_function", "s", "torch.sum", {"ref": "logprobs"}, {"callable": "print"})), "cannot decode"),
])
def test_disallowed_graphs_are_refused_at_creation(served, bad, words):
    r = served.post("create_custom_loss", {"session_id": served.session(), "custom_loss_seq_id": 0, "name": "bad",
                                           "inputs": [{"name": "logprobs", "rank": 1}], "graph": bad})
    assert r.status == 400 and words in r.json()["detail"], r.raw


def test_bad_metric_names_are_refused(served):
    g = graph(node("call_function", "s", "torch.sum", {"ref": "logprobs"}))
    g["nodes"][-1]["args"] = [{"tuple": [{"ref": "s"}, {"dict": {"loss": {"ref": "s"}}}]}]
    r = served.post("create_custom_loss", {"session_id": served.session(), "custom_loss_seq_id": 0, "name": "m",
                                           "inputs": [{"name": "logprobs", "rank": 1}], "graph": g})
    assert r.status == 400 and "custom/<name>:sum" in r.json()["detail"]


def test_graphs_that_would_blow_up_fail_at_submission_and_the_engine_keeps_serving(served):
    c = served
    session = c.session()
    # An outer product of outer products: [T, T, T, T] elements, far above the limit.
    outer = graph(
        node("call_method", "a", "unsqueeze", {"ref": "logprobs"}, -1),
        node("call_function", "b", "operator.mul", {"ref": "a"}, {"ref": "logprobs"}),
        node("call_method", "c", "unsqueeze", {"ref": "b"}, -1),
        node("call_method", "d", "unsqueeze", {"ref": "c"}, -1),
        node("call_function", "e", "operator.mul", {"ref": "d"}, {"ref": "b"}),
        node("call_function", "s", "torch.sum", {"ref": "e"}),
    )
    power = graph(node("call_function", "p", "operator.pow", 10, 10**9),
                  node("call_function", "s", "torch.sum", {"ref": "logprobs"}))
    vector = graph(node("call_function", "s", "operator.mul", {"ref": "logprobs"}, 2.0))  # not a scalar
    model = c.create_model(session, 0)
    data = [datum(t) for t in corpus(1, length=300)]
    for seq, (g, words) in enumerate([(outer, "elements"), (power, "integer exponent"), (vector, "scalar loss")]):
        r = c.post("create_custom_loss", {"session_id": session, "custom_loss_seq_id": seq, "name": "big",
                                          "inputs": [{"name": "logprobs", "rank": 1}], "graph": g})
        loss_id = loss_id_of(c, r)
        fb = c.submit_fb(model, seq + 1, data, loss_fn="custom", config={"loss_id": loss_id})
        assert fb.status == 400 and words in fb.json()["detail"], fb.raw
    assert c.forward_backward(model, 4, data)["metrics"]["loss:sum"] > 0


def test_losses_are_session_scoped_deduplicated_and_named_in_errors(served, engine):
    c = served
    session, other = c.session(), c.session()
    first = create_loss(c, session, 0, neg_ll, [("logprobs", 1), ("weights", 1)])
    again = create_loss(c, session, 0, neg_ll, [("logprobs", 1), ("weights", 1)])
    assert loss_id_of(c, first) == loss_id_of(c, again)
    assert create_loss(c, session, 0, clipped_ratio, [("logprobs", 1), ("old_logprobs", 1), ("advantages", 1)]).status == 409
    loss_id = f"{session}:loss:0"
    data = [datum(t) for t in corpus(1)]
    foreign = c.create_model(other, 0)
    r = c.submit_fb(foreign, 1, data, loss_fn="custom", config={"loss_id": loss_id})
    assert r.status == 400 and "another session" in r.json()["detail"]
    r = c.submit_fb(foreign, 2, data, loss_fn="custom", config={"loss_id": "nope"})
    assert r.status == 400 and "unknown custom loss" in r.json()["detail"]
    r = c.submit_fb(foreign, 3, data, loss_fn="custom")
    assert r.status == 400 and "loss_id" in r.json()["detail"]
    missing = [datum(t) for t in corpus(1)]
    del missing[0]["loss_fn_inputs"]["weights"]
    own = c.create_model(session, 1)
    r = c.submit_fb(own, 1, missing, loss_fn="custom", config={"loss_id": loss_id})
    assert r.status == 400 and "weights is missing" in r.json()["detail"]
    r = c.submit_fb(own, 2, data, loss_fn="ppo", config={"loss_id": loss_id})
    assert r.status == 400 and "must be a number" in r.json()["detail"]

    # Without the flag the engine refuses both calls by name.
    plain = Client(engine.url)
    r = plain.post("create_custom_loss", {"session_id": plain.session(), "custom_loss_seq_id": 0, "name": "x",
                                          "inputs": [], "graph": {}})
    assert r.status == 400 and "--custom-loss-server-side" in r.json()["detail"]
    model = plain.create_model(plain.session(), 0)
    r = plain.submit_fb(model, 1, data, loss_fn="custom", config={"loss_id": loss_id})
    assert r.status == 400 and "'custom' is not served" in r.json()["detail"]
