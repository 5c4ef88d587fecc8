"""Typed access to JSON request bodies.

Both SDK eras are accepted (protocol §1.5): every field is optional-with-default, explicit nulls
mean "absent", `type` tags are never required and unknown fields are ignored.
"""

import math
from typing import Any

from .errors import bad_request

_MISSING = object()
INT64_LIMIT = 1 << 63


class Body:
    def __init__(self, data: Any, where: str = "body"):
        if not isinstance(data, dict):
            raise bad_request(f"{where} must be a JSON object")
        self.data = data
        self.where = where

    def _get(self, key: str, default: Any) -> Any:
        value = self.data.get(key)
        return default if value is None else value

    def _name(self, key: str) -> str:
        return key if self.where == "body" else f"{self.where}.{key}"

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def str(self, key: str, default: Any = _MISSING) -> Any:
        value = self._get(key, default)
        if value is _MISSING:
            raise bad_request(f"missing required field '{self._name(key)}'")
        if value is not default and not isinstance(value, str):
            raise bad_request(f"field '{self._name(key)}' must be a string")
        return value

    def int(self, key: str, default: Any = _MISSING) -> Any:
        value = self._get(key, default)
        if value is _MISSING:
            raise bad_request(f"missing required field '{self._name(key)}'")
        if value is default:
            return value
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or (isinstance(value, float) and not value.is_integer())):  # also NaN and ±inf
            raise bad_request(f"field '{self._name(key)}' must be an integer")
        if not -INT64_LIMIT <= value < INT64_LIMIT:
            raise bad_request(f"field '{self._name(key)}' is out of range (a 64-bit integer)")
        return int(value)

    def float(self, key: str, default: Any = _MISSING) -> Any:
        value = self._get(key, default)
        if value is _MISSING:
            raise bad_request(f"missing required field '{self._name(key)}'")
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad_request(f"field '{self._name(key)}' must be a finite number")
        return float(value)

    def bool(self, key: str, default: Any = _MISSING) -> Any:
        value = self._get(key, default)
        if value is _MISSING:
            raise bad_request(f"missing required field '{self._name(key)}'")
        if value is not default and not isinstance(value, bool):
            raise bad_request(f"field '{self._name(key)}' must be a boolean")
        return value

    def obj(self, key: str, default: Any = _MISSING) -> Any:
        value = self._get(key, default)
        if value is _MISSING:
            raise bad_request(f"missing required field '{self._name(key)}'")
        if value is default:
            return value
        return Body(value, self._name(key))

    def list(self, key: str, default: Any = _MISSING) -> Any:
        value = self._get(key, default)
        if value is _MISSING:
            raise bad_request(f"missing required field '{self._name(key)}'")
        if value is not default and not isinstance(value, list):
            raise bad_request(f"field '{self._name(key)}' must be a list")
        return value

    def raw(self, key: str, default: Any = None) -> Any:
        return self._get(key, default)
