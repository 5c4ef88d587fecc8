"""Stability records of sampled sequences and the provenance checks of training datums (SDK 0.38).

A sample request with `record_stability_info: true` has the server keep, for each sampled
sequence, what it was sampled from and what was sampled, under the sequence's `sequence_id`
(`<request_id>:<i>`); training datums then say, with provenance spans, which positions of their
input and targets are positions of which recorded prompt or sampled sequence. Tinker's docs: the
records belong to the session that sampled them and can be trained on for one day after sampling,
each training request that uses one restarting that day. StableReinforce trains on them; its
objective is not published, so this engine refuses that loss (validation.py) — but it records,
checks every span that names a recorded sequence against the tokens it claims (for any loss), and
refuses a StableReinforce request whose provenance is missing or names nothing recorded, so a
client's datum construction is verified here exactly as far as the protocol defines it.

Spans are tuples `(kind, sequence_id, offset, length)` with kind "prompt" or "sampled".
"""

import threading
import time
from dataclasses import dataclass

import numpy as np

from .errors import bad_request

RETENTION_SECONDS = 24 * 3600
PROMPT, SAMPLED = "prompt", "sampled"


@dataclass
class RecordedSequence:
    session_id: str | None
    prompt: np.ndarray  # int64: the request's prompt tokens
    sampled: np.ndarray  # int64: this sequence's sampled tokens
    logprobs: np.ndarray | None  # float32: the sampler's logprobs of them
    expires_at: float


class StabilityStore:
    """Recorded sequences by id; expired ones are dropped on access and by `sweep`."""

    def __init__(self, retention_seconds: float = RETENTION_SECONDS, now=time.time, max_sequences: int = 1 << 20):
        self.retention = retention_seconds
        self.now = now
        self.max_sequences = max_sequences
        self._pending: dict = {}  # request_id -> (session_id, prompt)
        self._records: dict = {}  # sequence_id -> RecordedSequence
        self._lock = threading.Lock()  # completions arrive from compute threads

    def expect(self, request_id: str, session_id, prompt) -> None:
        """A request sampled with record_stability_info: its sequences are recorded when it completes."""
        with self._lock:
            self._pending[request_id] = (session_id, np.asarray(prompt, dtype=np.int64))

    def settle(self, request_id: str, result) -> None:
        """Records the sequences of a completed request (no-op for requests that did not ask)."""
        with self._lock:
            pending = self._pending.pop(request_id, None)
            if pending is None or not isinstance(result, dict):
                return
            session_id, prompt = pending
            expires = self.now() + self.retention
            for i, seq in enumerate(result.get("sequences", [])):
                logprobs = seq.get("logprobs")
                self._records[f"{request_id}:{i}"] = RecordedSequence(
                    session_id, prompt, np.asarray(seq["tokens"], dtype=np.int64),
                    None if logprobs is None else np.asarray(logprobs, dtype=np.float32), expires,
                )
            if len(self._records) > self.max_sequences:
                self._sweep_locked()
                # Still too many live ones: the oldest-recorded go first (dicts keep insertion order).
                for key in list(self._records)[: len(self._records) - self.max_sequences]:
                    del self._records[key]

    def forget(self, request_id: str) -> None:
        """A request that failed records nothing."""
        with self._lock:
            self._pending.pop(request_id, None)

    def get(self, sequence_id: str) -> RecordedSequence | None:
        with self._lock:
            rec = self._records.get(sequence_id)
            if rec is not None and rec.expires_at <= self.now():
                del self._records[sequence_id]
                return None
            return rec

    def touch(self, sequence_ids) -> None:
        """A training request used these: their day starts again."""
        with self._lock:
            expires = self.now() + self.retention
            for sid in sequence_ids:
                rec = self._records.get(sid)
                if rec is not None:
                    rec.expires_at = expires

    def sweep(self) -> int:
        with self._lock:
            return self._sweep_locked()

    def _sweep_locked(self) -> int:
        now = self.now()
        dead = [k for k, r in self._records.items() if r.expires_at <= now]
        for k in dead:
            del self._records[k]
        return len(dead)

    def __len__(self) -> int:
        return len(self._records)


def check_provenance(req, store: StabilityStore, session_id, require: bool) -> list:
    """Checks the provenance spans of every datum of a forward/forward_backward request; returns the
    recorded sequence ids they use. `require` (StableReinforce): every datum must carry spans,
    every span must name a live record of this session, and some target must be sampled."""
    used = []
    for i, datum in enumerate(req.data):
        where = f"data[{i}]"
        if (datum.input_spans is None) != (datum.target_spans is None):
            raise bad_request(f"{where}: provenance comes as a pair: model_input_spans and loss_fn_input_spans, or neither")
        if datum.input_spans is None:
            if require:
                raise bad_request(
                    f"{where} has no provenance spans; loss_fn {req.loss_fn!r} needs them on every datum (sample with "
                    "record_stability_info=True and attach the sequence ids with Datum.with_provenance)"
                )
            continue
        targets = datum.inputs.get("target_tokens")
        if targets is None:
            raise bad_request(f"{where}.loss_fn_input_spans: the datum has no loss_fn_inputs.target_tokens to tile")
        fields = (("model_input_spans", datum.input_spans, datum.tokens), ("loss_fn_input_spans", datum.target_spans, np.asarray(targets).reshape(-1)))
        for name, spans, tokens in fields:
            total = sum(span[3] for span in spans)
            if total != len(tokens):
                raise bad_request(f"{where}.{name} cover {total} positions but the field has {len(tokens)}; the spans must tile it exactly")
            pos = 0
            for j, (kind, sid, offset, length) in enumerate(spans):
                span_where = f"{where}.{name}[{j}]"
                if not sid or offset < 0 or length < 0:
                    raise bad_request(f"{span_where}: sequence_id must be non-empty, offset and length >= 0")
                rec = store.get(sid)
                if rec is None:
                    if require:
                        raise bad_request(
                            f"{span_where} names sequence {sid!r}, which is not recorded (not sampled with "
                            "record_stability_info=True, or its day without use ran out)"
                        )
                else:
                    if rec.session_id is not None and session_id is not None and rec.session_id != session_id:
                        raise bad_request(f"{span_where} names sequence {sid!r} of another session; recorded sequences belong to the session that sampled them")
                    source = rec.prompt if kind == PROMPT else rec.sampled
                    what = "prompt" if kind == PROMPT else "sampled tokens"
                    if offset + length > len(source):
                        raise bad_request(f"{span_where} covers {what} positions [{offset}, {offset + length}) of sequence {sid!r}, which has {len(source)}")
                    claimed = tokens[pos : pos + length]
                    differ = np.nonzero(claimed != source[offset : offset + length])[0]
                    if len(differ):
                        k = int(differ[0])
                        raise bad_request(
                            f"{span_where}: position {pos + k} holds token {int(claimed[k])} but {what} position "
                            f"{offset + k} of sequence {sid!r} is {int(source[offset + k])}"
                        )
                    used.append(sid)
                pos += length
        if require and not any(span[0] == SAMPLED for span in datum.target_spans):
            raise bad_request(f"{where}: no target is a sampled token, so loss_fn {req.loss_fn!r} has nothing to train")
    return used
