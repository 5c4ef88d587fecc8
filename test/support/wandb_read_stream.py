"""Reads a `run-<id>.wandb` record stream with wandb's own reader (DataStore + the Record protobuf
class wandb ships) and prints its records as JSON lines, so tests compare what wandb sees. For an
artifact record it adds `wandb_manifest_digest`: the digest wandb's manifest class computes from
the record's entries, and `wandb_manifest_json`: the `wandb_manifest.json` wandb's saver would upload
for them (`json.dump(manifest.to_manifest_json(), indent=4)`, the storage layout of a new artifact)."""
import json
import sys

import wandb
from google.protobuf.json_format import MessageToDict
from wandb.proto import wandb_internal_pb2
from wandb.sdk.artifacts.artifact_manifest_entry import ArtifactManifestEntry
from wandb.sdk.artifacts.artifact_manifests.artifact_manifest_v1 import ArtifactManifestV1
from wandb.sdk.artifacts.storage_policies.wandb_storage_policy import WandbStoragePolicy
from wandb.sdk.internal import datastore

# DataStore refuses to run outside wandb's internal process; reading is all this does.
wandb._assert_is_internal_process = True  # type: ignore[attr-defined]

ds = datastore.DataStore()
ds.open_for_scan(sys.argv[1])
while True:
    data = ds.scan_data()
    if data is None:
        break
    record = wandb_internal_pb2.Record()
    record.ParseFromString(data)
    kind = record.WhichOneof("record_type")
    out = {"type": kind, "num": record.num, "body": MessageToDict(getattr(record, kind), preserving_proto_field_name=True)}
    if kind == "artifact":
        entries = {
            e.path: ArtifactManifestEntry(path=e.path, digest=e.digest, ref=e.ref or None, size=None if e.ref else e.size)
            for e in record.artifact.manifest.contents
        }
        out["wandb_manifest_digest"] = ArtifactManifestV1(storage_policy=WandbStoragePolicy(), entries=entries).digest()
        manifest = ArtifactManifestV1(storage_policy=WandbStoragePolicy(config=wandb.Artifact("layout", type="model").manifest.storage_policy.config()), entries=entries)
        out["wandb_manifest_json"] = json.dumps(manifest.to_manifest_json(), indent=4)
    print(json.dumps(out))
