"""The reference's capture store (tinker-cookbook 0.6.1) on the records capture-store.parity.test.ts
sends on stdin ({"url": our daemon, "records": capture records in the reference's shape}).

1. The reference's own StoreSink exports the records to OUR daemon's URL (its /ingest/wire and
   /ingest/annotations endpoints), then resends them (its retry path).
2. The reference's CaptureDB ingests the same records (the batches StoreSink would post) into a
   temporary SQLite file, twice, and answers the same queries.
Prints one JSON object: the reference DB's answers, for the test to compare with our daemon's."""

import json
import sys
import tempfile
from pathlib import Path

from tinker_cookbook.capture.store.client import StoreSink, _ordered_ingest_batches
from tinker_cookbook.capture.store.db import CaptureDB


def main() -> None:
    request = json.load(sys.stdin)
    records = request["records"]
    sink = StoreSink(request["url"])
    sink.export(records, timeout=30)
    sink.export(records, timeout=30)  # a resend: everything deduped

    with tempfile.TemporaryDirectory(prefix="h61d-parity-") as tmp:
        db = CaptureDB(Path(tmp) / "capture.sqlite")
        ingests = []
        for _ in range(2):
            for endpoint, payload in _ordered_ingest_batches(records):
                if endpoint == "/ingest/wire":
                    result = db.ingest_wire(payload["rows"])
                else:
                    result = db.ingest_annotations(payload["annotations"])
                ingests.append({"endpoint": endpoint, "inserted": result.inserted, "deduped": result.deduped})
        queries = {}
        for name, (run_id, filters) in request["queries"].items():
            queries[name] = db.query_rows(run_id, filters=filters)
        out = {
            "ingests": ingests,
            "queries": queries,
            "annotations": {run: db.query_annotations(run) for run in request["annotation_runs"]},
            "runs": [r.to_dict() for r in db.list_runs()],
            "stream": [{"cursor": e.cursor, "type": e.event_type, "data": e.data} for e in db.stream_events(None, 0)],
        }
        db.close()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
