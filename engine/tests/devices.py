"""The devices the device-path tests run on: the CPU, and CUDA where present. ENGINE_TEST_DEVICES
(comma-separated) narrows that: the GPU check's quick profile sets `cuda`, the CPU variants being
what the CPU gate already runs."""

import os

import torch

CUDA = torch.cuda.is_available()
DEVICES = [d for d in ["cpu"] + (["cuda"] if CUDA else [])
           if d in os.environ.get("ENGINE_TEST_DEVICES", "cpu,cuda").split(",")]
