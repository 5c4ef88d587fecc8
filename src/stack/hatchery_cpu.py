"""hatchery-core's local dev server with its real trainer on CPU, for the compatibility matrix.

Why this exists: `python -m hatchery.core.local_dev` (hatchery-core 0.3.0) runs its real
`GPUWorker` only when CUDA is available; on a CPU machine it falls back to a scripted stub worker
(no `forward_logprobs`, one logprob row per request), which cannot run a training workflow. The
same gateway with `GPUWorker(device="cpu", dtype=torch.float32)` in place of the stub trains for
real on CPU. It also binds 127.0.0.1 only (local_dev binds 0.0.0.0). Everything else is
local_dev's own set-up, imported from it.

    HATCHERY_DEV_PORT=P HATCHERY_DEV_API_KEY=K HATCHERY_DEV_BASE_MODEL=DIR python src/stack/hatchery_cpu.py

(`npm run peers:start -- hatchery` runs it from the peer venv: src/stack/peers.mjs.)
"""

import asyncio
import contextlib
import os
import signal
import uuid

import torch
import uvicorn
from hatchery.core.gateway import create_app, set_config
from hatchery.core.local_dev import _build_config
from hatchery.core.worker import GPUWorker


async def serve() -> None:
    port = int(os.environ.get("HATCHERY_DEV_PORT", "8420"))
    api_key = os.environ.get("HATCHERY_DEV_API_KEY", "dev")
    base_model = os.environ["HATCHERY_DEV_BASE_MODEL"]

    config = _build_config(api_key)
    set_config(config)
    app = create_app(config=config)
    await config.metadata.initialize()
    await config.queue.initialize()

    worker_id = f"local-cpu-{uuid.uuid4().hex[:6]}"
    worker = GPUWorker(worker_id=worker_id, base_model_name=base_model, config=config, device="cpu", dtype=torch.float32)
    await worker.register()

    async def worker_loop() -> None:
        while True:
            job = await config.queue.dequeue(worker_id=worker_id, model_filter=base_model, visibility_timeout=300)
            if job is None:
                await asyncio.sleep(0.02)
                continue
            await worker._process_one(job)

    worker_task = asyncio.create_task(worker_loop())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="info", lifespan="off"))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    serve_task = asyncio.create_task(server.serve())
    print(f"hatchery CPU trainer ({base_model}) on http://127.0.0.1:{port}", flush=True)
    await stop.wait()
    server.should_exit = True
    await serve_task
    worker_task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await worker_task
    await config.queue.close()
    await config.metadata.close()


if __name__ == "__main__":
    asyncio.run(serve())
