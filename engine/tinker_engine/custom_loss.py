"""Server-side custom losses (SDK 0.38 `create_custom_loss`, behind --custom-loss-server-side).

The SDK traces the loss with torch.fx and uploads its graph as plain data (types/custom_loss_graph.py):
nodes of placeholder / call_function / call_method / output with encoded arguments. "Nothing in it is
executable until the server rebuilds it from its own list of allowed operations" — which is what
this module does: every function, method and attribute a node names is looked up in the tables
below, never resolved by name against a module, and nothing is ever eval'd. Before a loss runs on
a request's data it is dry-run on shape-only ("meta") tensors, so that a graph whose intermediates
would not fit in memory is refused with a 400 instead of taking the engine down.

Semantics (SDK `run_loss_handle`): the loss runs once per datum as
`loss(logprobs, *inputs)` → `(scalar loss, {"custom/<name>:sum|mean": scalar})`; the datum losses
are summed and each metric is summed over datums (`:sum`) or averaged (`:mean`).
"""

import hashlib
import json
import math
import operator
import re
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch.fx.node import _get_qualified_name

from .body import Body
from .errors import bad_request

MAX_NODES = 1024
MAX_INPUTS = 16
MAX_ARG_ITEMS = 64  # items of one list/tuple/dict argument
MAX_ARG_DEPTH = 8
# Largest intermediate a loss may create (elements): 64 Mi float32 = 256 MiB.
MAX_ELEMENTS = 1 << 26

_INPUT_NAME = re.compile(r"[a-z_][a-z0-9_]{0,63}")
_METRIC_KEY = re.compile(r"custom/[a-z0-9_./-]{1,64}:(sum|mean)")

_TORCH_FUNCTIONS = (
    "abs add amax amin clamp clamp_max clamp_min clip cumsum div eq exp exp2 expm1 floor ceil ge gt "
    "isfinite isnan le log log10 log1p log2 log_softmax logical_and logical_not logical_or logsumexp lt "
    "max maximum mean min minimum mul ne neg pow reciprocal relu round rsqrt sigmoid sign softmax sqrt "
    "square std sub sum tanh true_divide var where ones_like zeros_like full_like stack cat gather "
    "numel scalar_tensor tensor as_tensor masked_fill detach"
).split()
_FUNCTIONAL = (
    "relu softplus logsigmoid sigmoid log_softmax softmax gelu silu elu leaky_relu mse_loss l1_loss "
    "smooth_l1_loss huber_loss kl_div"
).split()
_MATH = "exp log log1p log2 log10 sqrt pow fabs isfinite isnan isinf floor ceil".split()
_OPERATORS = (
    "add sub mul truediv floordiv mod pow neg pos abs getitem lt le gt ge eq ne and_ or_ invert not_"
).split()

_ALLOWED = {
    **{f"torch.{n}": getattr(torch, n) for n in _TORCH_FUNCTIONS},
    **{f"torch.nn.functional.{n}": getattr(F, n) for n in _FUNCTIONAL},
    **{f"math.{n}": getattr(math, n) for n in _MATH},
    **{f"operator.{n}": getattr(operator, n) for n in _OPERATORS},
}
# By the public spelling and by the name torch.fx records, which the SDK sends (some functional
# ops live in torch._C._nn, e.g. softplus); `_operator.` is sent as `operator.`.
FUNCTIONS = {
    **_ALLOWED,
    **{_get_qualified_name(fn).replace("_operator.", "operator.", 1): fn for fn in _ALLOWED.values()},
}
GETATTR = ("getattr", "builtins.getattr")
# Tensor methods a loss may call (none in place, none leaving torch, none growing a tensor by a
# count the graph chooses, e.g. repeat/expand).
METHODS = frozenset((
    "abs add amax amin clamp clamp_max clamp_min clip cumsum detach dim div double eq exp expm1 flatten "
    "float ge gather gt isfinite isnan le log log1p log_softmax logical_and logical_not logical_or "
    "logsumexp lt masked_fill max mean min mul ne neg numel permute pow reciprocal relu reshape rsqrt "
    "sigmoid sign size softmax sqrt square squeeze std sub sum t tanh transpose type_as unsqueeze var "
    "view view_as where"
).split())
ATTRIBUTES = frozenset(("shape", "ndim", "dtype", "T"))
DTYPES = {n: getattr(torch, n) for n in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "bool")}
LAYOUTS = {"strided": torch.strided}
MEMORY_FORMATS = {"contiguous_format": torch.contiguous_format, "preserve_format": torch.preserve_format}


@dataclass
class Node:
    op: str
    name: str
    target: str
    args: list
    kwargs: dict


@dataclass
class CustomLoss:
    loss_id: str
    name: str
    inputs: list  # [(name, rank)], logprobs first
    nodes: list
    fingerprint: str

    @property
    def input_names(self) -> list:
        return [name for name, _ in self.inputs[1:]]


class LossError(Exception):
    """A graph that fails while it runs (a bad argument, a shape mismatch): the request's fault."""


# ----------------------------------------------------------------------------------- creation


def compile_loss(body: Body, loss_id: str) -> CustomLoss:
    name = body.str("name")
    inputs = _parse_inputs(body.list("inputs"))
    graph = body.obj("graph")
    if graph.int("format", 1) != 1:
        raise bad_request("create_custom_loss: graph.format must be 1")
    raw_nodes = graph.list("nodes")
    if not 1 <= len(raw_nodes) <= MAX_NODES:
        raise bad_request(f"create_custom_loss: graph.nodes must have 1 to {MAX_NODES} nodes")
    nodes, defined, placeholders = [], set(), []
    for i, raw in enumerate(raw_nodes):
        where = f"graph.nodes[{i}]"
        n = Body(raw, where)
        node = Node(n.str("op"), n.str("name"), n.str("target"), n.list("args", []), n.raw("kwargs", {}) or {})
        if not isinstance(node.kwargs, dict):
            raise bad_request(f"create_custom_loss: {where}.kwargs must be an object")
        if node.name in defined:
            raise bad_request(f"create_custom_loss: {where} reuses the node name {node.name!r}")
        for arg in [*node.args, *node.kwargs.values()]:
            _check_arg(arg, defined, f"{where} ({node.name})", 0)
        _check_node(node, where)
        if node.op == "placeholder":
            if len(nodes) != len(placeholders):
                raise bad_request(f"create_custom_loss: {where}: placeholders must come first")
            placeholders.append(node.target)
        if node.op == "output" and i != len(raw_nodes) - 1:
            raise bad_request(f"create_custom_loss: {where}: the output node must be the last")
        defined.add(node.name)
        nodes.append(node)
    if placeholders != [n for n, _ in inputs]:
        raise bad_request(f"create_custom_loss: the graph's parameters {placeholders} do not match inputs "
                          f"{[n for n, _ in inputs]}")
    if nodes[-1].op != "output":
        raise bad_request("create_custom_loss: the graph has no output node")
    _check_output(nodes[-1])
    digest = hashlib.sha256(json.dumps([name, inputs, body.raw("graph")], sort_keys=True).encode()).hexdigest()
    return CustomLoss(loss_id, name, inputs, nodes, digest)


def _parse_inputs(raw: list) -> list:
    if not 1 <= len(raw) <= MAX_INPUTS:
        raise bad_request(f"create_custom_loss: inputs must list 1 to {MAX_INPUTS} inputs, logprobs first")
    inputs = []
    for i, item in enumerate(raw):
        b = Body(item, f"inputs[{i}]")
        name, rank = b.str("name"), b.int("rank")
        if not _INPUT_NAME.fullmatch(name) or rank not in (0, 1, 2):
            raise bad_request(f"create_custom_loss: inputs[{i}] needs a lowercase name and a rank of 0, 1 or 2")
        inputs.append((name, rank))
    if inputs[0][0] != "logprobs" or inputs[0][1] == 0:
        raise bad_request("create_custom_loss: the first input must be logprobs, of rank 1 or 2")
    if len({n for n, _ in inputs}) != len(inputs):
        raise bad_request("create_custom_loss: input names must be distinct")
    return inputs


def _check_node(node: Node, where: str) -> None:
    if node.op == "call_function":
        if node.target in GETATTR:
            if len(node.args) != 2 or node.kwargs or node.args[1] not in ATTRIBUTES:
                raise bad_request(f"create_custom_loss: {where} reads an attribute other than {sorted(ATTRIBUTES)}")
        elif node.target not in FUNCTIONS:
            raise bad_request(f"create_custom_loss: {where} calls {node.target!r}, which this engine does not allow")
    elif node.op == "call_method":
        if node.target not in METHODS:
            raise bad_request(f"create_custom_loss: {where} calls method {node.target!r}, which this engine does not allow")
        if not node.args or not (isinstance(node.args[0], dict) and "ref" in node.args[0]):
            raise bad_request(f"create_custom_loss: {where} calls a method on something other than a node")
    elif node.op not in ("placeholder", "output"):
        raise bad_request(f"create_custom_loss: {where} has op {node.op!r}; only placeholder, call_function, "
                          "call_method and output are allowed")


def _check_output(node: Node) -> None:
    if len(node.args) != 1:
        raise bad_request("create_custom_loss: the output node must have one argument, (loss, metrics)")
    out = node.args[0]
    pair = out.get("tuple") if isinstance(out, dict) else out
    if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], dict) and "dict" in pair[1]):
        raise bad_request("create_custom_loss: the loss must return (loss, metrics)")
    for key in pair[1]["dict"]:
        if not _METRIC_KEY.fullmatch(key):
            raise bad_request(f"create_custom_loss: metric {key!r} must be named custom/<name>:sum or custom/<name>:mean")


def _check_arg(arg, defined: set, where: str, depth: int) -> None:
    if depth > MAX_ARG_DEPTH:
        raise bad_request(f"create_custom_loss: {where}: arguments nest too deeply")
    if arg is None or isinstance(arg, (bool, int, float, str)):
        return
    if isinstance(arg, list):
        if len(arg) > MAX_ARG_ITEMS:
            raise bad_request(f"create_custom_loss: {where}: a list argument has more than {MAX_ARG_ITEMS} items")
        for a in arg:
            _check_arg(a, defined, where, depth + 1)
        return
    if not isinstance(arg, dict) or len(arg) != 1:
        raise bad_request(f"create_custom_loss: {where}: cannot decode argument {str(arg)[:80]}")
    (kind, value), = arg.items()
    if kind == "ref":
        if value not in defined:
            raise bad_request(f"create_custom_loss: {where} refers to {value!r} before it is defined")
    elif kind in ("tuple", "slice"):
        if not isinstance(value, list) or (kind == "slice" and len(value) != 3):
            raise bad_request(f"create_custom_loss: {where}: a {kind} argument must be a list")
        _check_arg(value, defined, where, depth + 1)
    elif kind == "dict":
        if not isinstance(value, dict) or len(value) > MAX_ARG_ITEMS:
            raise bad_request(f"create_custom_loss: {where}: a dict argument must be an object of at most {MAX_ARG_ITEMS} keys")
        for a in value.values():
            _check_arg(a, defined, where, depth + 1)
    elif kind == "ellipsis":
        pass
    elif kind == "float":
        if value not in ("inf", "-inf", "nan"):
            raise bad_request(f"create_custom_loss: {where}: float {value!r} must be inf, -inf or nan")
    elif kind == "dtype" and value in DTYPES or kind == "layout" and value in LAYOUTS:
        pass
    elif kind == "memory_format" and value in MEMORY_FORMATS or kind == "device" and isinstance(value, str):
        pass
    else:
        raise bad_request(f"create_custom_loss: {where}: cannot decode argument {str(arg)[:80]}")


# ------------------------------------------------------------------------------------ running


def _decode(arg, env: dict, device):
    if isinstance(arg, list):
        return [_decode(a, env, device) for a in arg]
    if not isinstance(arg, dict):
        return arg
    (kind, value), = arg.items()
    if kind == "ref":
        return env[value]
    if kind == "tuple":
        return tuple(_decode(a, env, device) for a in value)
    if kind == "dict":
        return {k: _decode(a, env, device) for k, a in value.items()}
    if kind == "slice":
        return slice(*(_decode(a, env, device) for a in value))
    if kind == "ellipsis":
        return Ellipsis
    if kind == "float":
        return float(value)
    if kind == "dtype":
        return DTYPES[value]
    if kind == "device":
        return device  # the trace's device (the client's CPU) means "where the data is"
    if kind == "layout":
        return LAYOUTS[value]
    return MEMORY_FORMATS[value]


def run(loss: CustomLoss, values: list):
    """(loss, metrics) of one datum; values are logprobs then the inputs, as tensors."""
    env, device = {}, values[0].device
    placeholders = iter(values)
    for node in loss.nodes:
        try:
            if node.op == "placeholder":
                env[node.name] = next(placeholders)
                continue
            args = _decode(node.args, env, device)
            kwargs = {k: _decode(v, env, device) for k, v in node.kwargs.items()}
            if node.op == "output":
                result = args[0]
                break
            if node.op == "call_method":
                self_ = args[0]
                if not isinstance(self_, torch.Tensor):
                    raise LossError(f"method {node.target} called on a {type(self_).__name__}")
                value = getattr(self_, node.target)(*args[1:], **kwargs)
            elif node.target in GETATTR:
                if not isinstance(args[0], torch.Tensor):
                    raise LossError(f"attribute {args[1]} read from a {type(args[0]).__name__}")
                value = getattr(args[0], args[1])
            else:
                _check_operands(node.target, args)
                value = FUNCTIONS[node.target](*args, **kwargs)
        except LossError as e:
            raise LossError(f"custom loss {loss.name!r}, node {node.name}: {e}") from None
        except (TypeError, ValueError, RuntimeError, IndexError, KeyError, ZeroDivisionError, OverflowError) as e:
            raise LossError(f"custom loss {loss.name!r}, node {node.name} ({node.target}): {e}") from None
        if isinstance(value, torch.Tensor) and value.numel() > MAX_ELEMENTS:
            raise LossError(f"custom loss {loss.name!r}, node {node.name} makes a tensor of {value.numel()} elements "
                            f"(more than {MAX_ELEMENTS})")
        env[node.name] = value
    loss_value, metrics = result
    if not isinstance(loss_value, torch.Tensor) or loss_value.ndim != 0:
        shape = tuple(loss_value.shape) if isinstance(loss_value, torch.Tensor) else type(loss_value).__name__
        raise LossError(f"custom loss {loss.name!r} must return a scalar loss, got {shape}")
    for key, value in metrics.items():
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            raise LossError(f"custom loss {loss.name!r} metric {key!r} is not a scalar tensor")
    return loss_value, metrics


def _check_operands(target: str, args: list) -> None:
    """Python-level arithmetic (on shape ints) must stay cheap: no strings or sequences multiplied
    into huge ones, no giant integer powers."""
    if not target.startswith("operator.") or target == "operator.getitem":
        return
    for a in args:
        if not isinstance(a, (torch.Tensor, bool, int, float)):
            raise LossError(f"{target} on a {type(a).__name__}")
    if target == "operator.pow" and all(isinstance(a, int) for a in args) and abs(args[1]) > 64:
        raise LossError(f"{target} with an integer exponent of {args[1]}")


def dry_run(loss: CustomLoss, shapes: list, dtypes: list) -> None:
    """Runs the graph on shape-only tensors: a graph that fails, or whose intermediates would be
    too large, on these shapes is refused before it touches a model."""
    values = [torch.empty(s, dtype=d, device="meta") for s, d in zip(shapes, dtypes)]
    try:
        run(loss, values)
    except LossError as e:
        raise bad_request(str(e)) from None
    except NotImplementedError as e:  # an allowed op without a shape-only kernel: cannot be vetted
        raise bad_request(f"custom loss {loss.name!r} cannot be checked before it runs: {e}") from None


def validate_custom(req, spec, loss: CustomLoss, max_datums: int = 1 << 16) -> None:
    """Submit-time checks of a `custom` request (as validation.validate_forward does for the
    built-in losses): every datum has target_tokens at logprobs' declared rank and each input the
    loss reads at its declared rank; then a shape-only dry run on the request's shapes."""
    from .validation import _check_token_range

    if not req.data:
        raise bad_request("data must contain at least one datum")
    if len(req.data) > max_datums:
        raise bad_request(f"too many datums in one request ({len(req.data)} > {max_datums})")
    extra = sorted(set(req.loss_fn_config) | (set(req.loss_fn_text) - {"loss_id"}))
    if extra:
        raise bad_request(f"loss_fn_config of loss_fn 'custom' takes only loss_id, not {', '.join(extra)}")
    checked = set()
    for i, datum in enumerate(req.data):
        where, n = f"data[{i}]", len(datum.tokens)
        if n == 0 or n > spec.max_context:
            raise bad_request(f"{where}.model_input has {n} tokens (1 to {spec.max_context} allowed)")
        _check_token_range(datum.tokens, spec.vocab_size, f"{where}.model_input")
        needed = [("target_tokens", loss.inputs[0][1])] + loss.inputs[1:]
        for key, rank in needed:
            arr = datum.inputs.get(key)
            kw = f"{where}.loss_fn_inputs.{key}"
            if arr is None:
                raise bad_request(f"{kw} is missing; custom loss {loss.name!r} reads it")
            if arr.ndim != rank or (rank > 0 and arr.shape[0] != n):
                raise bad_request(f"{kw} has shape {list(arr.shape)}; custom loss {loss.name!r} declared rank "
                                  f"{rank} (first dimension {n})")
            if key != "target_tokens" and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
                raise bad_request(f"{kw} contains NaN or infinite values")
        targets = datum.inputs["target_tokens"]
        if not np.issubdtype(targets.dtype, np.integer):
            raise bad_request(f"{where}.loss_fn_inputs.target_tokens must have dtype int64")
        _check_token_range(targets, spec.vocab_size, f"{where}.loss_fn_inputs.target_tokens")
        shapes = [tuple(targets.shape)] + [tuple(datum.inputs[k].shape) for k in loss.input_names]
        dtypes = [torch.float32] + [_torch_dtype(datum.inputs[k]) for k in loss.input_names]
        key = (tuple(shapes), tuple(dtypes))
        if key not in checked:
            dry_run(loss, shapes, dtypes)
            checked.add(key)


def _torch_dtype(arr) -> torch.dtype:
    return torch.int64 if np.issubdtype(arr.dtype, np.integer) else torch.float32


class Accumulator:
    """Loss function for the trainer (one call per datum) that also collects the metrics."""

    def __init__(self, loss: CustomLoss, data: list):
        self.loss, self.sums, self.count = loss, {}, 0
        self._data = iter(data)

    def __call__(self, logprobs, inputs, config):
        datum = next(self._data)
        values = [logprobs] + [torch.as_tensor(datum.inputs[n], dtype=_torch_dtype(datum.inputs[n]), device=logprobs.device)
                               for n in self.loss.input_names]
        value, metrics = run(self.loss, values)
        self.count += 1
        for key, m in metrics.items():
            self.sums[key] = self.sums.get(key, 0.0) + float(m.detach())
        return value

    def metrics(self) -> dict:
        return {k: v / self.count if k.endswith(":mean") else v for k, v in self.sums.items()}
