"""The planner tools' arguments as pydantic models: validation, and the JSON Schema the model
is shown (`tool_schema`), come from one definition. What the arguments mean in general (an
endpoint, field paths, a reason, a ttl) is said once, in the system prompt, not on every tool."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from cronpilot.domain.planning.freshness_planner import MAX_LOOK_AGAIN_SECONDS

MAX_HISTORY = 50


def _utc(moment: datetime) -> datetime:
    # A model may leave out the zone; cronpilot's times are UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


UtcTime = Annotated[datetime, AfterValidator(_utc)]
Reason = Annotated[str, Field(min_length=1, max_length=2000)]
Ttl = Annotated[float, Field(gt=0)]


def _look_again(seconds: float) -> float:
    # Clamped, not refused: a refusal costs the model a step, and a wish past the bound has an
    # obvious nearest value. The floor is the planner's setting (`PlannerConfig`).
    return min(seconds, MAX_LOOK_AGAIN_SECONDS)


LookAgain = Annotated[
    float,
    Field(gt=0),
    AfterValidator(_look_again),
]


class ToolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _null_is_the_default(cls, data: Any) -> Any:
        # A strict schema makes every field required: the model says "the default" with null.
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {
            name: value
            for name, value in data.items()
            if value is not None or name not in fields or fields[name].is_required()
        }


class EndpointArgs(ToolArgs):
    endpoint: str | None = None


class ReadArgs(EndpointArgs):
    fields: list[str] | None = None


class HistoryArgs(ReadArgs):
    limit: int = Field(default=10, ge=1, le=MAX_HISTORY)


class SiblingsArgs(ToolArgs):
    fields: list[str] | None = None


class FindArgs(ToolArgs):
    intent: str = Field(min_length=1, max_length=500)


class ActionArgs(ToolArgs):
    """No `endpoint`: an action changes the analysed endpoint, and only it."""

    reason: Reason


class IntervalArgs(ActionArgs):
    interval_seconds: float = Field(gt=0)
    ttl_seconds: Ttl


class NextTimeArgs(ActionArgs):
    at: UtcTime
    ttl_seconds: Ttl


class PauseArgs(ActionArgs):
    until: UtcTime | None = Field(description="null resumes now")


class SubmitArgs(ToolArgs):
    reasoning: str = Field(min_length=1, max_length=8000)
    confidence: float = Field(ge=0, le=1)
    next_analysis_in_seconds: LookAgain
