"""Host ↔ device copies that do not make the host wait for the device's queued work.

On CUDA a plain `.to("cuda")` from pageable memory, `torch.tensor(..., device="cuda")` and `.tolist()`
of a device tensor all wait for every kernel queued on the stream. The host then cannot queue the
next kernels while the device runs, which is most of the speed of a launch-bound step. Training
and sampling both go through these two instead.
"""

import torch


def upload(t: torch.Tensor, device) -> torch.Tensor:
    """Host → device without a stream sync: a pinned staging copy and a non-blocking transfer (the
    caching host allocator keeps the staging buffer alive until the copy has run)."""
    if device.type != "cuda":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)


def start_download(*tensors):
    """Starts copying small device tensors to the host and returns a function that waits for those
    copies alone (work queued after this call, such as the next decode, keeps running) and gives
    their values as lists."""
    if tensors[0].device.type != "cuda":
        return lambda: [t.tolist() for t in tensors]
    host = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in tensors]
    for h, t in zip(host, tensors):
        h.copy_(t, non_blocking=True)
    copied = torch.cuda.Event()
    copied.record()

    def wait():
        copied.synchronize()
        return [h.tolist() for h in host]

    return wait
