"""Drives `cookbook serve`'s /v1/messages with the official anthropic Python SDK; prints what it got as JSON.

Usage: python anthropic_client_check.py <base_url> <model> <tool_base_url> <tool_model> <api_key>.
The tool loop runs against <tool_base_url>, a server whose sampler writes a get_weather call.
The Node test compares the answers with the npm SDK's, so this script only collects them.
"""
import json
import sys

import anthropic

base_url, model, tool_base_url, tool_model, api_key = sys.argv[1:6]
client = anthropic.Anthropic(base_url=base_url, api_key=api_key, max_retries=0)
tool_client = anthropic.Anthropic(base_url=tool_base_url, api_key=api_key, max_retries=0)
system = "You are terse."
messages = [{"role": "user", "content": "Name a colour."}]
greedy = {"temperature": 0}  # sent as the API takes it, whether or not the SDK's signature names it
out = {}

out["plain"] = client.messages.create(model=model, max_tokens=8, system=system, messages=messages, extra_body=greedy).model_dump()

with client.messages.stream(model=model, max_tokens=8, system=system, messages=messages, extra_body=greedy) as stream:
    events = [event.type for event in stream]
    out["streamed"] = stream.get_final_message().model_dump()
out["stream_events"] = events

weather = {
    "name": "get_weather",
    "description": "Weather of a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
history = [{"role": "user", "content": "Weather in Paris?"}]
loop = []
for _ in range(4):
    reply = tool_client.messages.create(model=tool_model, max_tokens=64, system=system, messages=history, tools=[weather], extra_body=greedy)
    loop.append(reply.model_dump())
    if reply.stop_reason != "tool_use":
        break
    history.append({"role": "assistant", "content": reply.content})
    history.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": block.id, "content": "sunny" if block.name == "get_weather" else "unknown tool"}
                for block in reply.content
                if block.type == "tool_use"
            ],
        }
    )
out["loop"] = loop


def error_of(call):
    try:
        call()
    except anthropic.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        return {"class": type(e).__name__, "status": e.status_code, "type": (body.get("error") or {}).get("type"), "message": e.message}
    return None


out["errors"] = {
    "unknown_model": error_of(lambda: client.messages.create(model="no-such-model", max_tokens=4, messages=messages)),
    "bad_temperature": error_of(lambda: client.messages.create(model=model, max_tokens=4, messages=messages, extra_body={"temperature": 7})),
    "wrong_key": error_of(lambda: anthropic.Anthropic(base_url=base_url, api_key="wrong", max_retries=0).messages.create(model=model, max_tokens=4, messages=messages)),
}
print(json.dumps(out, default=str))
