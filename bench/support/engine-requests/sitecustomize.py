# bench:reference --request-log: on PYTHONPATH of the engine's process only when asked, this logs
# every HTTP request the engine serves (route, bytes in and out, when it came and when it was
# answered) to <BENCH_ENGINE_REQUEST_LOG>.<pid>, one JSON line each. It wraps the ASGI app handed to
# uvicorn.run; a Python without uvicorn (the reference's driver) is left alone.
import json
import os
import time

_PREFIX = os.environ.get("BENCH_ENGINE_REQUEST_LOG")
if _PREFIX:
    try:
        import uvicorn
    except ImportError:
        uvicorn = None
    if uvicorn is not None:
        _run = uvicorn.run

        def _logged_run(app, *args, **kwargs):
            out = open(f"{_PREFIX}.{os.getpid()}", "a", buffering=1)

            async def logged(scope, receive, send):
                if scope["type"] != "http":
                    return await app(scope, receive, send)
                start, size, answered = time.time(), 0, 0

                async def counting_receive():
                    nonlocal size
                    message = await receive()
                    if message["type"] == "http.request":
                        size += len(message.get("body", b""))
                    return message

                async def counting_send(message):
                    nonlocal answered
                    if message["type"] == "http.response.body":
                        answered += len(message.get("body", b""))
                    await send(message)

                try:
                    return await app(scope, counting_receive, counting_send)
                finally:
                    out.write(json.dumps({"t0": start, "t1": time.time(), "path": scope["path"], "in": size, "out": answered}) + "\n")

            return _run(logged, *args, **kwargs)

        uvicorn.run = _logged_run
