"""Sends `cookbook serve` a chat request with an image through the official openai Python client.

Usage: python openai_image_check.py <base_url> <model> <api_key> <png path>. The image goes once as
a base64 data: URL and once as a file:// URL; prints both answers and the refusal of a remote URL.
"""
import base64
import json
import sys

import openai

base_url, model, api_key, png = sys.argv[1:5]
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)


def ask(url):
    return client.chat.completions.create(
        model=model,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": url}},
                    {"type": "text", "text": "Which shape is this?"},
                ],
            }
        ],
        max_tokens=6,
        temperature=0,
    ).model_dump()


with open(png, "rb") as f:
    data_url = "data:image/png;base64," + base64.b64encode(f.read()).decode("ascii")
out = {"data_url": ask(data_url), "file_url": ask("file://" + png)}
try:
    ask("https://example.com/cat.png")
    out["remote"] = None
except openai.APIStatusError as e:
    out["remote"] = {"status": e.status_code, "code": e.code, "param": e.param, "message": e.message}
print(json.dumps(out))
