"""What applying a jobs file would change (a dry run), as people and scripts read it: secrets
masked, URLs without their credentials."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from cronpilot.domain.access.secrets import MASK, is_secret_header, mask_url
from cronpilot.domain.alerts.notify_targets import SECRET_FIELDS
from cronpilot.domain.declaration_diff import DeclarationChange, FieldChange, FieldOutcome
from cronpilot.domain.model import JSON


def changes_view(changes: Sequence[DeclarationChange]) -> dict[str, Any]:
    """The `--json` shape of a dry run."""
    return {"dry_run": True, "changes": [_change_view(change) for change in changes]}


def field_line(item: FieldChange) -> str:
    old, new = _text(item.path, item.old), _text(item.path, item.new)
    if item.outcome is FieldOutcome.ADDED:
        return f"{item.path}: added {new}"
    if item.outcome is FieldOutcome.REMOVED:
        return f"{item.path}: removed (was {old})"
    if old == new:
        # Both sides masked: say that it changes without showing either.
        return f"{item.path}: changed (secret, not shown)"
    return f"{item.path}: {old} → {new}"


def _text(path: str, value: JSON) -> str:
    return json.dumps(_masked(path, value), ensure_ascii=False)


def _masked(path: str, value: JSON) -> JSON:
    """A field's value fit for output: URLs without their secrets, secret headers masked."""
    head, _, name = path.partition(".")
    if head == "headers" and is_secret_header(name):
        return MASK
    if head == "url" and isinstance(value, str):
        return mask_url(value)
    if head == "notify" and isinstance(value, list):
        return [mask_url(url) if isinstance(url, str) else url for url in value]
    if head.startswith("notify_targets") and _TARGET_SECRET.search(path):
        # The path does not say the target's kind: any value that is a secret of some kind is.
        return MASK
    return value


_SECRET_NAMES = sorted({name for names in SECRET_FIELDS.values() for name in names})


_TARGET_SECRET = re.compile(rf"\.(?:{'|'.join(map(re.escape, _SECRET_NAMES))})$")


def _change_view(change: DeclarationChange) -> dict[str, Any]:
    return {
        "ref": change.ref,
        "outcome": change.outcome.value,
        "fields": [
            {
                "path": item.path,
                "outcome": item.outcome.value,
                "old": _masked(item.path, item.old),
                "new": _masked(item.path, item.new),
            }
            for item in change.fields
        ],
    }
