"""The trainer's non-finite gradient check (trainer.grads_finite): what it flags, and that checking
leaves every gradient bitwise as it was (the check runs before optim_step reads them)."""

import pytest
import torch

from devices import DEVICES
from tinker_engine.trainer import grads_finite

INT_OF_SIZE = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(t):
    return t.view(INT_OF_SIZE[t.element_size()])


def adapter_grads(device):
    # Values a norm-based check would get wrong (float32's largest finite number overflows a sum of
    # squares) or a rescale could change (-0.0, subnormals), in the dtypes adapters train in.
    edge = torch.tensor([-0.0, 1e-45, 3.4e38, -3.4e38, 1.0], dtype=torch.float32)
    return [
        torch.randn(8, 16, generator=torch.Generator().manual_seed(0)).to(device),
        edge.to(device),
        torch.randn(16, 4, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16).to(device),
        torch.randn(3, dtype=torch.float64).to(device),
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_finite_gradients_pass_and_stay_bitwise_the_same(device):
    grads = adapter_grads(device)
    before = [g.clone() for g in grads]
    assert grads_finite(grads)
    for g, b in zip(grads, before):
        assert torch.equal(bits(g), bits(b))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("which", [0, 1, 2, 3])
def test_one_non_finite_value_in_any_tensor_fails_the_check(device, bad, which):
    grads = adapter_grads(device)
    grads[which].view(-1)[-1] = bad
    assert not grads_finite(grads)


def test_no_gradients_are_finite():
    assert grads_finite([])
