"""The devices the device-path tests run on: the CPU, and CUDA where present. ENGINE_TEST_DEVICES
(comma-separated) narrows that: the GPU check's quick profile sets `cuda`, the CPU variants being
what the CPU gate already runs."""

import os

import pytest
import torch

CUDA = torch.cuda.is_available()
DEVICES = [d for d in ["cpu"] + (["cuda"] if CUDA else [])
           if d in os.environ.get("ENGINE_TEST_DEVICES", "cpu,cuda").split(",")]
# For a test with no device variants whose subject is the CPU's (or no device's) behaviour.
cpu_only = pytest.mark.skipif("cpu" not in DEVICES, reason="a CPU test (ENGINE_TEST_DEVICES leaves out the CPU)")
