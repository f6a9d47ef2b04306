"""An error's message as people and scripts read it, on the CLI's `error:` line and in the
API's problem `detail` alike."""

from __future__ import annotations

from cronpilot.domain.access.secrets import mask_urls
from cronpilot.domain.runs.excerpt import excerpt

MAX_ERROR_CHARS = 1000


def error_line(message: str) -> str:
    """One line, whatever the message holds; a URL in it (a refused endpoint, a database)
    keeps its credentials to itself. Values are cut where they are quoted; the line is cut
    too, for the messages that quote them whole (click's, drivers'), after masking so that no
    cut hides a credential from it."""
    return excerpt(" ".join(mask_urls(message).split()), MAX_ERROR_CHARS)
