"""The parameters schema the reference's @tool (tinker-cookbook 0.6.1, pydantic v2) declares for a
broad set of parameter types, for tool-schema.parity.test.ts. One tool per case, named t_<case>, with
one parameter `v`; then a few tools with several parameters. stdout: one JSON object, tool name ->
the `parameters` of its spec."""

import enum
import inspect
import json
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from tinker_cookbook.tool_use import ToolResult, simple_tool_result, tool


class Inner(BaseModel):
    n: int
    flag: bool = False


class Short(BaseModel):
    a: int


class Long(BaseModel):
    a: int
    c: str


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int


class Doc(BaseModel):
    """A documented model."""

    b: Optional[Inner] = None
    c: list[Inner]


class Tree(BaseModel):
    kids: list["Tree"]


class Color(str, enum.Enum):
    red = "red"
    green = "green"


class Num(int, enum.Enum):
    a = 1
    b = 2


class One(str, enum.Enum):
    only = "only"


_NO_DEFAULT = inspect.Parameter.empty

# name -> (annotation of `v`, its default); the same names as CASES in the test.
TYPES: dict[str, tuple[Any, Any]] = {
    # scalars, defaults, descriptions, constraints
    "int": (int, _NO_DEFAULT),
    "float": (float, _NO_DEFAULT),
    "bool": (bool, _NO_DEFAULT),
    "str": (str, _NO_DEFAULT),
    "int_default": (int, 5),
    "float_default": (float, 2.5),
    "bool_default": (bool, True),
    "str_default": (str, "x"),
    "int_desc": (Annotated[int, "How many"], _NO_DEFAULT),
    "str_desc_default": (Annotated[str, "A word"], "x"),
    "title_desc": (Annotated[int, Field(title="Custom", description="fd")], _NO_DEFAULT),
    "examples": (Annotated[int, Field(examples=[1, 2])], _NO_DEFAULT),
    "int_ge_le": (Annotated[int, Field(ge=0, le=10)], _NO_DEFAULT),
    "int_gt_lt": (Annotated[int, Field(gt=0, lt=10)], _NO_DEFAULT),
    "int_gt0": (Annotated[int, Field(gt=0)], _NO_DEFAULT),
    "float_ge": (Annotated[float, Field(ge=0.5)], _NO_DEFAULT),
    "float_gt_lt": (Annotated[float, Field(gt=0, lt=1)], _NO_DEFAULT),
    "int_multiple": (Annotated[int, Field(multiple_of=3)], _NO_DEFAULT),
    "str_len": (Annotated[str, Field(min_length=1, max_length=5)], _NO_DEFAULT),
    "str_pattern": (Annotated[str, Field(pattern="^a+$")], _NO_DEFAULT),
    "int_ge_default": (Annotated[int, Field(ge=1, default=3)], _NO_DEFAULT),
    # Optional
    "opt_int": (Optional[int], None),
    "opt_int_required": (Optional[int], _NO_DEFAULT),
    "opt_int_default3": (Optional[int], 3),
    "opt_float": (Optional[float], None),
    "opt_bool": (Optional[bool], None),
    "opt_bool_required": (Optional[bool], _NO_DEFAULT),
    "opt_str": (Optional[str], None),
    "opt_str_desc": (Annotated[Optional[str], "d"], None),
    "opt_inner_desc": (Optional[Annotated[int, Field(description="d")]], None),
    "opt_str_len": (Optional[Annotated[str, Field(min_length=1)]], None),
    "opt_list": (Optional[list[int]], None),
    "opt_dict": (Optional[dict[str, int]], None),
    "none": (None, _NO_DEFAULT),
    # lists and tuples
    "list_int": (list[int], _NO_DEFAULT),
    "list_float": (list[float], _NO_DEFAULT),
    "list_bool": (list[bool], _NO_DEFAULT),
    "list_str": (list[str], _NO_DEFAULT),
    "list_any": (list[Any], _NO_DEFAULT),
    "list_opt_int": (list[Optional[int]], _NO_DEFAULT),
    "list_opt_bool": (list[Optional[bool]], _NO_DEFAULT),
    "list_default": (list[int], [1, 2]),
    "list_len": (Annotated[list[int], Field(min_length=1, max_length=3)], _NO_DEFAULT),
    "list_item_ge": (list[Annotated[int, Field(ge=0)]], _NO_DEFAULT),
    "list_item_desc": (list[Annotated[int, Field(description="i")]], _NO_DEFAULT),
    "list_list_str": (list[list[str]], _NO_DEFAULT),
    "list_title": (Annotated[list[int], Field(title="T")], _NO_DEFAULT),
    "tuple_int_str": (tuple[int, str], _NO_DEFAULT),
    "tuple_var": (tuple[int, ...], _NO_DEFAULT),
    "tuple_empty": (tuple[()], _NO_DEFAULT),
    # dicts
    "dict_int": (dict[str, int], _NO_DEFAULT),
    "dict_float": (dict[str, float], _NO_DEFAULT),
    "dict_bool": (dict[str, bool], _NO_DEFAULT),
    "dict_str": (dict[str, str], _NO_DEFAULT),
    "dict_any": (dict[str, Any], _NO_DEFAULT),
    "dict_list_int": (dict[str, list[int]], _NO_DEFAULT),
    "dict_opt_int": (dict[str, Optional[int]], _NO_DEFAULT),
    "dict_dict": (dict[str, dict[str, int]], _NO_DEFAULT),
    "dict_default": (dict[str, int], {"b": 1, "a": 2}),
    "dict_desc": (Annotated[dict[str, int], "d"], _NO_DEFAULT),
    "dict_lit_keys": (dict[Literal["a", "b"], int], _NO_DEFAULT),
    "dict_pattern_keys": (dict[Annotated[str, Field(pattern="^x")], int], _NO_DEFAULT),
    "dict_minlen_keys": (dict[Annotated[str, Field(min_length=2)], int], _NO_DEFAULT),
    # models
    "model": (Inner, _NO_DEFAULT),
    "list_model": (list[Inner], _NO_DEFAULT),
    "opt_model": (Optional[Inner], None),
    "list_opt_model": (list[Optional[Inner]], _NO_DEFAULT),
    "model_desc": (Annotated[Inner, Field(description="d")], _NO_DEFAULT),
    "opt_model_desc": (Annotated[Optional[Inner], "d"], None),
    "model_default": (Inner, Inner(n=1)),
    "dict_model": (dict[str, Inner], _NO_DEFAULT),
    "tuple_model": (tuple[Inner, int], _NO_DEFAULT),
    "doc_model": (Doc, _NO_DEFAULT),
    "strict_model": (Strict, _NO_DEFAULT),
    "recursive_model": (Tree, _NO_DEFAULT),
    # enums and literals
    "enum": (Color, _NO_DEFAULT),
    "enum_default": (Color, Color.red),
    "enum_int": (Num, _NO_DEFAULT),
    "enum_one": (One, _NO_DEFAULT),
    "opt_enum": (Optional[Color], None),
    "list_enum": (list[Color], _NO_DEFAULT),
    "lit_str": (Literal["a", "b"], _NO_DEFAULT),
    "lit_str_one": (Literal["a"], _NO_DEFAULT),
    "lit_str_default": (Literal["a", "b"], "a"),
    "lit_int": (Literal[1, 2], _NO_DEFAULT),
    "lit_int_one": (Literal[1], _NO_DEFAULT),
    "lit_zero": (Literal[0], _NO_DEFAULT),
    "lit_int_default": (Literal[1, 2], 1),
    "lit_true": (Literal[True], _NO_DEFAULT),
    "lit_bools": (Literal[True, False], _NO_DEFAULT),
    "lit_mixed": (Literal[1, "a"], _NO_DEFAULT),
    "lit_int_bool": (Literal[1, True], _NO_DEFAULT),
    "lit_none": (Literal[None], _NO_DEFAULT),
    "lit_str_none": (Literal["a", None], _NO_DEFAULT),
    "opt_lit": (Optional[Literal["a", "b"]], None),
    "list_lit_int": (list[Literal[1, 2]], _NO_DEFAULT),
    # unions
    "union_int_str": (Union[int, str], _NO_DEFAULT),
    "union_str_int": (Union[str, int], _NO_DEFAULT),
    "union_int_str_none": (Union[int, str, None], None),
    "union_none_first": (Union[None, int], _NO_DEFAULT),
    "union_bool_int": (Union[bool, int], _NO_DEFAULT),
    "union_str_lit": (Union[str, Literal[1]], _NO_DEFAULT),
    "union_dup": (Union[int, Annotated[int, Field(ge=0)]], _NO_DEFAULT),
    "union_list_int": (Union[list[int], int], _NO_DEFAULT),
    "union_model_int": (Union[Inner, int], _NO_DEFAULT),
    "union_models": (Union[Short, Long], _NO_DEFAULT),
    "opt_union_models": (Union[Short, Long, None], None),
    "union_default": (Union[int, str], 1),
    "disc": (Annotated[Union[Cat, Dog], Field(discriminator="kind")], _NO_DEFAULT),
    "any": (Any, _NO_DEFAULT),
}


def make_tool(name: str, annotation: Any, default: Any):
    async def fn(v):  # the signature @tool reads is set below
        return simple_tool_result("")

    fn.__name__ = f"t_{name}"
    fn.__annotations__ = {"v": annotation, "return": ToolResult}
    if default is not _NO_DEFAULT:
        fn.__defaults__ = (default,)
    return tool(fn)


class Zed(BaseModel):
    z: int


@tool
async def several(b: Zed, a: Inner, c: list[Inner], max_results: int = 5, x2y_id: Optional[str] = None) -> ToolResult:
    """Several parameters: $defs sorted, one model used twice, titles of snake_case names."""
    return simple_tool_result("")


@tool
async def nothing() -> ToolResult:
    """No parameters."""
    return simple_tool_result("")


def main() -> None:
    tools = [make_tool(n, a, d) for n, (a, d) in TYPES.items()] + [several, nothing]
    print(json.dumps({t.name: t.to_spec()["parameters"] for t in tools}))


main()
