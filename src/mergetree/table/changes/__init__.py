"""Change streams (issue 26): what commits changed, per key (`compute`), and the changelog
files a write publishes with its commit (`producers`)."""
from __future__ import annotations

from .compute import (
                      PRODUCER_PROPERTY,
                      SNAPSHOT_ID_COLUMN,
                      SOURCES,
                      ChangePlan,
                      ChangeUnit,
                      CommitFiles,
                      change_of_files,
                      plan_changes,
                      read_changes,
                      read_in_commit_order,
                      read_units,
                      snapshot_range,
)

__all__ = ["PRODUCER_PROPERTY", "SNAPSHOT_ID_COLUMN", "SOURCES", "ChangePlan", "ChangeUnit", "CommitFiles",
           "change_of_files", "plan_changes", "read_changes", "read_in_commit_order", "read_units", "snapshot_range"]
