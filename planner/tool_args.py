"""The planner tools' arguments as pydantic models: validation, and the JSON Schema the model
is shown, come from one definition."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from cronpilot.domain.heuristic import MAX_LOOK_AGAIN_SECONDS

MAX_HISTORY = 50


def _utc(moment: datetime) -> datetime:
    # A model may leave out the zone; cronpilot's times are UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


UtcTime = Annotated[datetime, AfterValidator(_utc)]
Reason = Annotated[
    str, Field(min_length=1, max_length=2000, description="Why, for the admin who audits it.")
]
Ttl = Annotated[
    float, Field(gt=0, description="How long the change stands, in seconds; then it lapses.")
]


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Projection(ToolArgs):
    fields: list[str] | None = Field(
        default=None,
        description=(
            "Field paths to return instead of the whole body, e.g. ['fraud_rate', "
            "'items[0].id', 'items[*].id']; [] returns no body at all."
        ),
    )


class ReadArgs(Projection):
    endpoint: str | None = Field(
        default=None,
        description="A sibling endpoint's name in the same job; default: the analysed endpoint.",
    )


class HistoryArgs(ReadArgs):
    limit: int = Field(default=10, ge=1, le=MAX_HISTORY, description="Runs, newest first.")
    offset: int = Field(default=0, ge=0, description="Runs to skip, for paging.")


class EndpointArgs(ToolArgs):
    endpoint: str | None = Field(
        default=None,
        description="A sibling endpoint's name in the same job; default: the analysed endpoint.",
    )


class ActionArgs(ToolArgs):
    endpoint: str | None = Field(
        default=None,
        description="Optional; actions apply only to the analysed endpoint.",
    )
    reason: Reason


class IntervalArgs(ActionArgs):
    interval_seconds: float = Field(gt=0, description="Run every this many seconds.")
    ttl_seconds: Ttl


class NextTimeArgs(ActionArgs):
    at: UtcTime = Field(description="ISO-8601 time of the next run (UTC if no zone).")
    ttl_seconds: Ttl


class PauseArgs(ActionArgs):
    until: UtcTime | None = Field(
        description="ISO-8601 time the pause ends; null resumes a paused endpoint now."
    )


class SubmitArgs(ToolArgs):
    reasoning: str = Field(min_length=1, max_length=8000, description="What you concluded, why.")
    confidence: float = Field(ge=0, le=1, description="0 = a guess, 1 = certain.")
    next_analysis_in_seconds: float = Field(
        gt=0, le=MAX_LOOK_AGAIN_SECONDS, description="When to look at this endpoint again."
    )
