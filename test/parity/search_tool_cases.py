"""The reference's search_tool recipe (tinker-cookbook 0.6.1) on the cases search-tool.parity.test.ts
sends on stdin: normalize_answer, TextAnswerReward, SEARCH_TASK_INSTRUCTIONS, the search tool's spec,
and the tool message ChromaTool.search writes for given retrieved documents. Prints one JSON object.

The recipe imports chromadb and google-genai at module level for its vector store; neither is
installed here, and none of the pieces compared use them, so empty modules stand in for the imports."""

import asyncio
import json
import sys
import types


def _stub(name: str, **attrs: object) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module


_stub("chromadb", AsyncHttpClient=None)
_stub("chromadb.api", AsyncClientAPI=object)
_stub("chromadb.api.types", QueryResult=dict)
_stub("chromadb.config", Settings=object)
try:
    import google  # the real namespace package (protobuf's) stays usable
except ImportError:
    _stub("google", __path__=[])
_stub("google.genai.types", HttpOptions=object, EmbedContentConfig=object)
_stub("google.genai", Client=object, types=sys.modules["google.genai.types"])
sys.modules["google"].genai = sys.modules["google.genai"]  # type: ignore[attr-defined]

from tinker_cookbook.recipes.search_tool.search_env import SEARCH_TASK_INSTRUCTIONS  # noqa: E402
from tinker_cookbook.recipes.search_tool.tools import (  # noqa: E402
    ChromaTool,
    RetrievalConfig,
    TextAnswerReward,
    normalize_answer,
)
from tinker_cookbook.renderers.base import ToolCall  # noqa: E402
from tinker_cookbook.tool_use import handle_tool_call  # noqa: E402


async def main() -> None:
    cases = json.load(sys.stdin)
    tool = ChromaTool(None, None, "wiki", RetrievalConfig(), 1, 1)  # type: ignore[arg-type]

    async def clients():
        return None, None

    async def embeddings(_client, queries):
        return [[0.0] for _ in queries]

    async def query(_client, _embeddings):
        return {"documents": cases["search"]["documents"]}

    tool._ensure_clients = clients  # type: ignore[method-assign]
    tool._get_embeddings_with_retry = embeddings  # type: ignore[method-assign]
    tool._query_chroma_with_retry = query  # type: ignore[method-assign]
    call = ToolCall(
        function=ToolCall.FunctionBody(name="search", arguments=json.dumps({"query_list": cases["search"]["queries"]})),
        id="c1",
    )
    result = await handle_tool_call({"search": tool.search}, call)
    rewards = []
    for case in cases["rewards"]:
        reward, metrics = await TextAnswerReward(gold_answers=case["gold"], format_coef=case["format_coef"])(case["history"])
        rewards.append([reward, metrics])
    print(
        json.dumps(
            {
                "normalized": [normalize_answer(s) for s in cases["normalize"]],
                "rewards": rewards,
                "instructions": SEARCH_TASK_INSTRUCTIONS,
                "spec": tool.search.to_spec(),
                "search_messages": result.messages,
            }
        )
    )


asyncio.run(main())
