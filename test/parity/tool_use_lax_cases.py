"""The reference's @tool (tinker-cookbook 0.6.1) validating tool-call arguments in pydantic's lax mode,
for tool-use-lax.parity.test.ts. One tool per declared type, named t_<type>, with one parameter `v`
that reports, as JSON, the value the function received. stdin: a JSON list of [tool, arguments
text]; stdout: one JSON object with each tool's spec and each call's outcome (the value the function
got, or the error category and message of the tool message)."""

import asyncio
import enum
import inspect
import json
import math
import sys
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, Field

from tinker_cookbook.renderers.base import ToolCall
from tinker_cookbook.tool_use import ToolResult, handle_tool_call, simple_tool_result, tool


class Inner(BaseModel):
    n: int
    flag: bool = False


class Short(BaseModel):
    a: int


class Long(BaseModel):
    a: int
    c: str


class Color(str, enum.Enum):
    red = "red"
    green = "green"


_NO_DEFAULT = inspect.Parameter.empty

# name -> (annotation of `v`, its default); the same names as TYPES in the test.
TYPES: dict[str, tuple[Any, Any]] = {
    "int": (int, _NO_DEFAULT),
    "float": (float, _NO_DEFAULT),
    "bool": (bool, _NO_DEFAULT),
    "str": (str, _NO_DEFAULT),
    "int_default": (int, 5),
    "int_ge0": (Annotated[int, Field(ge=0)], _NO_DEFAULT),
    "list_int": (list[int], _NO_DEFAULT),
    "list_float": (list[float], _NO_DEFAULT),
    "list_opt_int": (list[Optional[int]], _NO_DEFAULT),
    "dict_int": (dict[str, int], _NO_DEFAULT),
    "tuple_int_str": (tuple[int, str], _NO_DEFAULT),
    "model": (Inner, _NO_DEFAULT),
    "list_model": (list[Inner], _NO_DEFAULT),
    "opt_int": (Optional[int], None),
    "opt_int_required": (Optional[int], _NO_DEFAULT),
    "opt_bool": (Optional[bool], None),
    "lit_str": (Literal["a", "b"], _NO_DEFAULT),
    "lit_int": (Literal[1, 2], _NO_DEFAULT),
    "lit_true": (Literal[True], _NO_DEFAULT),
    "lit_zero": (Literal[0], _NO_DEFAULT),
    "enum_str": (Color, _NO_DEFAULT),
    "union_int_str": (Union[int, str], _NO_DEFAULT),
    "union_str_int": (Union[str, int], _NO_DEFAULT),
    "union_bool_int": (Union[bool, int], _NO_DEFAULT),
    "union_int_bool": (Union[int, bool], _NO_DEFAULT),
    "union_float_int": (Union[float, int], _NO_DEFAULT),
    "union_models": (Union[Short, Long], _NO_DEFAULT),
    "union_list_int": (Union[list[int], int], _NO_DEFAULT),
}


def encode(v: Any) -> Any:
    """The received value as JSON; non-finite floats (which JSON lacks) as {"$float": repr}."""
    if isinstance(v, enum.Enum):
        return encode(v.value)
    if isinstance(v, float) and not math.isfinite(v):
        return {"$float": repr(v)}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    if isinstance(v, dict):
        return {k: encode(x) for k, x in v.items()}
    if isinstance(v, BaseModel):
        return encode(v.model_dump())
    return v


def make_tool(name: str, annotation: Any, default: Any):
    async def fn(v):  # the signature @tool reads is set below
        return simple_tool_result(json.dumps(encode(v)))

    fn.__name__ = f"t_{name}"
    fn.__annotations__ = {"v": annotation, "return": ToolResult}
    if default is not _NO_DEFAULT:
        fn.__defaults__ = (default,)
    return tool(fn)


async def main() -> None:
    tools = {t.name: t for t in (make_tool(n, a, d) for n, (a, d) in TYPES.items())}
    calls = json.loads(sys.stdin.read())
    results = []
    for i, (name, arguments) in enumerate(calls):
        r = await handle_tool_call(tools, ToolCall(function=ToolCall.FunctionBody(name=name, arguments=arguments), id=f"c{i}"))
        content = r.messages[0]["content"]
        if "error" in r.metadata:
            results.append({"error": r.metadata["error"], "message": json.loads(content)["error"]})
        else:
            results.append({"ok": json.loads(content)})
    print(json.dumps({"specs": {n: t.to_spec() for n, t in tools.items()}, "results": results}))


asyncio.run(main())
