"""Drives `cookbook serve` with the official openai Python client; prints what it got as JSON.

Usage: python openai_client_check.py <base_url> <model> <api_key>. The Node test compares the
answers with those of the npm client and the engine, so this script only collects them.
"""
import json
import sys

import openai

base_url, model, api_key = sys.argv[1:4]
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."}]
out = {"models": [m.id for m in client.models.list()]}

chat = client.chat.completions.create(
    model=model, messages=messages, max_tokens=8, temperature=1.0, seed=7, n=2, logprobs=True, top_logprobs=2
)
out["chat"] = chat.model_dump()

stream = client.chat.completions.create(
    model=model, messages=messages, max_tokens=8, temperature=1.0, seed=7, stream=True, stream_options={"include_usage": True}
)
chunks = list(stream)
out["stream_text"] = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
out["stream_finish"] = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
out["stream_usage"] = [c.usage.model_dump() for c in chunks if c.usage]

completion = client.completions.create(model=model, prompt="Once upon a time", max_tokens=6, temperature=0, logprobs=2)
out["completion"] = completion.model_dump()


def error_of(call):
    try:
        call()
    except openai.APIStatusError as e:
        return {"class": type(e).__name__, "status": e.status_code, "code": e.code, "param": e.param, "type": e.type}
    return None


out["errors"] = {
    "unknown_model": error_of(lambda: client.chat.completions.create(model="no-such-model", messages=messages)),
    "bad_temperature": error_of(lambda: client.chat.completions.create(model=model, messages=messages, temperature=7)),
    "wrong_key": error_of(lambda: openai.OpenAI(base_url=base_url, api_key="wrong", max_retries=0).models.list()),
}
print(json.dumps(out))
