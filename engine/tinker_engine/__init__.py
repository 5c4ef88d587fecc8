"""Local Tinker-compatible training engine (PyTorch, transformers, peft)."""

__version__ = "0.1.0"
