"""Uploading an exported folder to the Hugging Face Hub, as the reference's `publish_to_hf_hub`: create the
model repo (private unless asked otherwise, existing one kept) and upload the folder in one commit.

The plan (repo, visibility, commit message, every file with its size) is made first and is all a dry run
shows; the upload is the two HfApi calls at the end, given the plan and nothing else.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

# The Hub's repo ids: a name, or namespace/name; letters, digits, '-', '_', '.'; at most 96 characters.
_REPO_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*$")


class PublishError(Exception):
    """The upload cannot be made (no token, a bad repo id); the message says what to do."""


@dataclass(frozen=True)
class UploadPlan:
    repo_id: str
    private: bool
    commit_message: str
    folder: str
    files: list  # [{"path": relative path, "bytes": size}], sorted by path

    @property
    def url(self) -> str:
        return f"https://huggingface.co/{self.repo_id}"

    def to_json(self) -> dict:
        return {**asdict(self), "url": self.url, "total_bytes": sum(f["bytes"] for f in self.files)}


def check_repo_id(repo_id: str) -> None:
    if len(repo_id) > 96 or not _REPO_ID.match(repo_id) or ".." in repo_id or "--" in repo_id:
        raise PublishError(f"--publish {repo_id!r} is not a Hugging Face repo id (namespace/name: letters, digits, "
                           "'-', '_', '.')")


def hub_token(env=os.environ) -> str:
    token = env.get("HF_TOKEN")
    if not token:
        raise PublishError("--publish needs HF_TOKEN set to a Hugging Face token with write access "
                           "(nothing was uploaded; --dry-run shows what would be sent without one)")
    return token


def plan_upload(folder: Path, repo_id: str, *, private: bool = True, commit_message: str | None = None) -> UploadPlan:
    check_repo_id(repo_id)
    files = sorted(
        ({"path": p.relative_to(folder).as_posix(), "bytes": p.stat().st_size} for p in folder.rglob("*") if p.is_file()),
        key=lambda f: f["path"],
    )
    message = commit_message or f"Upload {folder.name} (exported by durable-cookbook)"
    return UploadPlan(repo_id=repo_id, private=private, commit_message=message, folder=str(folder), files=files)


def upload(plan: UploadPlan, token: str, api_class=None) -> str:
    """Creates the repo (kept if it exists) and uploads the planned folder; returns the repo's URL."""
    if api_class is None:
        from huggingface_hub import HfApi as api_class
    api = api_class(token=token)
    api.create_repo(repo_id=plan.repo_id, repo_type="model", private=plan.private, exist_ok=True)
    api.upload_folder(folder_path=plan.folder, repo_id=plan.repo_id, repo_type="model",
                      commit_message=plan.commit_message)
    return plan.url
