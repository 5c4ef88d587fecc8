"""A Hugging Face checkpoint folder read without loading its weights: config, shard files, tensor shapes."""

from __future__ import annotations

import json
from pathlib import Path

from .errors import MergeError

INDEX = "model.safetensors.index.json"
# Copied into a merged folder as they are (the reference's list, plus generation settings).
SIDE_FILES = ("generation_config.json", "tokenizer_config.json", "tokenizer.json", "tokenizer.model",
              "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "chat_template.jinja",
              "chat_template.json", "tiktoken.model", "preprocessor_config.json", "processor_config.json",
              "video_preprocessor_config.json")


class BaseCheckpoint:
    def __init__(self, folder: Path):
        self.folder = folder
        if not folder.is_dir():
            raise MergeError(f"base checkpoint {folder}: no such directory")
        self.config = read_json(folder / "config.json", "base checkpoint config")
        self.shards = self._shard_files()
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.dtypes: dict[str, str] = {}
        self.shard_of: dict[str, str] = {}
        self.size = 0
        for shard in self.shards:
            self._read_header(shard)

    def _shard_files(self) -> list[str]:
        index = self.folder / INDEX
        if index.is_file():
            weight_map = read_json(index, "safetensors index").get("weight_map")
            if not isinstance(weight_map, dict) or not weight_map:
                raise MergeError(f"{index}: no weight_map")
            shards = sorted(set(weight_map.values()))
            for shard in shards:
                if not (self.folder / shard).is_file():
                    raise MergeError(f"base checkpoint {self.folder}: shard {shard} listed in {INDEX} is missing")
            return shards
        shards = sorted(p.name for p in self.folder.glob("*.safetensors"))
        if not shards:
            raise MergeError(f"base checkpoint {self.folder}: no *.safetensors weights")
        return shards

    def _read_header(self, shard: str) -> None:
        from safetensors import safe_open

        path = self.folder / shard
        try:
            with safe_open(str(path), framework="pt") as f:
                for key in f.keys():  # noqa: SIM118 — safe_open has no __contains__
                    piece = f.get_slice(key)
                    if key in self.shard_of:
                        raise MergeError(f"base checkpoint {self.folder}: tensor {key} is in both "
                                         f"{self.shard_of[key]} and {shard}")
                    self.shapes[key], self.dtypes[key], self.shard_of[key] = tuple(piece.get_shape()), piece.get_dtype(), shard
        except MergeError:
            raise
        except Exception as e:  # noqa: BLE001 — safetensors raises its own error types
            raise MergeError(f"{path}: not readable safetensors ({e})") from None
        self.size += path.stat().st_size

    def load_shard(self, shard: str) -> dict:
        from safetensors.torch import load_file

        path = self.folder / shard
        try:
            return load_file(str(path))
        except Exception as e:  # noqa: BLE001
            raise MergeError(f"{path}: not readable safetensors ({e})") from None

    def load_tensor(self, key: str):
        from safetensors import safe_open

        path = self.folder / self.shard_of[key]
        try:
            with safe_open(str(path), framework="pt") as f:
                return f.get_tensor(key)
        except Exception as e:  # noqa: BLE001
            raise MergeError(f"{path}: cannot read tensor {key} ({e})") from None


def read_json(path: Path, what: str) -> dict:
    if not path.is_file():
        raise MergeError(f"{what} {path} not found")
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise MergeError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise MergeError(f"{path}: not a JSON object")
    return value
