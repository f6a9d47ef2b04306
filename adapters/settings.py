"""Process settings, read from `CRONPILOT_*` environment variables and an optional `.env` file."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from cronpilot.adapters.http.signing import secret_bytes
from cronpilot.adapters.logs import LogFormat
from cronpilot.adapters.secret_files import SecretFileError, read_secret_file
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import DEFAULT_FLOOR_SECONDS
from cronpilot.domain.schedule.schedule import MAX_SECONDS

ENV_PREFIX = "CRONPILOT_"
FLOOR_VARIABLE = f"{ENV_PREFIX}MIN_INTERVAL_SECONDS"

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

ASYNC_DRIVERS = {"postgresql": "asyncpg", "sqlite": "aiosqlite"}
# No userinfo in the examples: error lines mask it (see `domain.access.secrets.mask_urls`).
_URL_EXAMPLES = "postgresql+asyncpg://HOST/DB or sqlite+aiosqlite:///PATH.db"
# What asyncpg's connect() takes from a URL's query string as text; anything else would reach
# it as an unexpected keyword and fail on first use instead of at startup.
_ASYNCPG_QUERY = frozenset(
    {"ssl", "host", "port", "passfile", "target_session_attrs", "prepared_statement_cache_size"}
)
_PGBOUNCER_VALUES = frozenset({"true", "false"})
"""`?pgbouncer=true`: the URL goes through PgBouncer in transaction pooling mode
(docs/many-machines.md, "Behind PgBouncer"); the store takes the parameter, the driver never
sees it."""
_SSL_MODES = frozenset({"disable", "allow", "prefer", "require", "verify-ca", "verify-full"})
_MAX_PORT = 65535


FILE_SETTINGS = (
    "database_url",
    "database_listen_url",
    "signing_secret",
    "signing_secret_previous",
    "llm_api_key",
    "mcp_token",
)
"""The secret settings that may be read from a file: `CRONPILOT_LLM_API_KEY_FILE=/run/secrets/llm`
(Docker and Kubernetes secrets). The secret key has its own, `CRONPILOT_SECRET_KEY_FILE`."""


class _SecretFiles(PydanticBaseSettingsSource):
    """`CRONPILOT_<NAME>_FILE` for each of `FILE_SETTINGS`, from the environment: the file's
    text (`adapters.secret_files`). A problem raises `InvalidConfig` naming the variable and the
    file, never what it holds."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name in FILE_SETTINGS:
            variable = f"{ENV_PREFIX}{name.upper()}"
            path = os.environ.get(f"{variable}_FILE")
            if path is None:
                continue
            if variable in os.environ:
                raise InvalidConfig(
                    f"{variable}_FILE", f"set {variable} or {variable}_FILE, not both"
                )
            try:
                values[name] = read_secret_file(path)
            except SecretFileError as exc:
                raise InvalidConfig(f"{variable}_FILE", str(exc)) from None
        return values


def _default_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def _default_key_file() -> Path:
    return Path.home() / ".cronpilot" / "secret.key"


class Settings(BaseSettings):
    """Everything a cronpilot process can be told from outside; secrets stay `SecretStr`."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=".env",
        env_file_encoding="utf-8",
        # A shared .env may hold other tools' variables (e.g. SIMULATOR_URL for jobs.yaml).
        extra="ignore",
        frozen=True,
    )

    database_url: str = "sqlite+aiosqlite:///./cronpilot.db"
    database_listen_url: str | None = None
    """PostgreSQL straight, not through a pooler, for the wake-ups' LISTEN when
    `database_url` goes through PgBouncer; without it such workers poll."""
    worker_id: str = Field(default_factory=_default_worker_id, min_length=1)
    concurrency: int = Field(default=100, gt=0)
    batch_size: int = Field(default=100, gt=0)
    lease_seconds: float = Field(default=60, gt=0)
    grace_seconds: float = Field(default=10, ge=0)
    max_sleep_seconds: float = Field(default=5, gt=0)
    claim_ahead_seconds: float = Field(default=0.05, ge=0)
    """Claim slots this long before they fall due and call each on time (see `WorkerConfig`)."""
    dag_sweep_seconds: float = Field(default=5, gt=0)
    """How often a scheduler looks for DAG dependants that became ready while leased."""
    cancel_poll_seconds: float = Field(default=0.5, gt=0)
    """How often a scheduler holding runs looks for cancels asked for them (`runs cancel`)."""
    reaper_interval_seconds: float = Field(default=10, gt=0)
    max_retry_after_seconds: float = Field(default=3600, gt=0)
    """The longest an endpoint's `Retry-After` may hold its calls back."""
    retention_runs: int = Field(default=1000, gt=0)
    prune_interval_seconds: float = Field(default=600, gt=0)
    """How often a worker prunes runs past `retention_runs` and rows past the windows below."""
    retention_sessions_days: float = Field(default=14, gt=0)
    """Days a heuristic or LLM analysis session is kept, with its tool calls."""
    retention_rule_evaluations_days: float = Field(default=7, gt=0)
    """Days a rules session is kept, with its rule evaluations."""
    retention_proposals_days: float = Field(default=90, gt=0)
    """Days a decided proposal is kept; a pending one stays until it is decided or expires."""
    retention_notifications_days: float = Field(default=30, gt=0)
    """Days a delivered or given-up notification is kept; an undelivered one stays."""
    retention_audit_days: float = Field(default=365, gt=0)
    """Days an audit entry is kept: the longest window, it is the record of who did what."""
    retention_approvals_days: float = Field(default=30, gt=0)
    """Days a decided approval gate is kept; a pending one stays until decided or expired."""
    retention_runs_days: float = Field(default=90, gt=0)
    """Days a finished run is kept (by slot); on PostgreSQL a day of history goes at once."""
    planner_keep_quiet_sessions: bool = False
    """Store every planner pass as a session, the quiet ones too (those that propose nothing
    and find nothing new are otherwise only counted): to watch a planner at work."""
    heartbeat_seconds: float = Field(default=10, gt=0)
    """How often a scheduler worker tells the workers registry it is alive."""
    worker_stale_seconds: float = Field(default=60, gt=0)
    """A worker not heard from for this long is gone: `workers list` leaves it out, and
    housekeeping forgets it. Keep it several heartbeats long."""
    otel: bool = False
    """Report claim, call and record spans to OpenTelemetry (needs the extra `otel`)."""
    notify_concurrency: int = Field(default=10, gt=0)
    """Webhook deliveries in flight at once per worker (and notifications claimed per trip)."""
    notify_lease_seconds: float = Field(default=60, gt=0)
    """How long a claimed notification stays a worker's: longer than a delivery takes."""
    notify_poll_seconds: float = Field(default=2, gt=0)
    """How often a worker looks for due notifications when its last look found few."""
    notify_timeout_seconds: float = Field(default=10, gt=0)
    """How long a webhook may take to answer."""
    public_url: str | None = Field(default=None, pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$")
    """Where people reach the API and the console (`https://cronpilot.example.com`): alerts
    link back to the endpoint's console page there. Unset: alerts carry no link."""
    metrics_port: int | None = Field(default=None, ge=0, le=_MAX_PORT)
    """Where a worker serves `/metrics`, `/healthz` and `/readyz`; unset: no probe server."""
    metrics_host: str = Field(default="127.0.0.1", min_length=1)
    """The address the probe server binds: loopback unless Prometheus scrapes from elsewhere."""
    ready_loop_seconds: float = Field(default=60, gt=0)
    """`/readyz` fails when a worker loop of the process has not turned for this long. A
    planner's round waits for its slowest analysis: with an LLM, more than its timeout times
    its attempts."""
    min_interval_seconds: float = Field(default=DEFAULT_FLOOR_SECONDS, gt=0, le=MAX_SECONDS)
    """The floor: no schedule, hint or clamp plans an endpoint's slots closer than this; `apply`
    refuses a baseline under it and stamps it on every endpoint it writes."""
    allowed_networks: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """CIDR blocks user URLs may reach although private (e.g. `127.0.0.0/8` for a local demo)."""
    secret_key: SecretStr | None = None
    """Fernet key for header secrets at rest; when unset, `secret_key_file` is used (or made)."""
    secret_key_file: Path = Field(default_factory=_default_key_file)
    signing_secret: SecretStr | None = None
    """When set, outgoing calls and alerts are signed by the Standard Webhooks spec with it
    (`whsec_<base64>`; `adapters.http.signing`)."""
    signing_secret_previous: SecretStr | None = None
    """The secret being rotated out: it signs too (a second signature) until
    `signing_previous_until`."""
    signing_previous_until: datetime | None = None
    """When the previous secret's grace ends; unset: it signs for as long as it is set."""
    signing_legacy_headers: bool = False
    """Also send the `X-Cronpilot-Timestamp` / `X-Cronpilot-Signature` pair of earlier
    releases (with `signing_secret`): for this release only, while receivers move over."""
    conditional_memory_mb: float = Field(default=64, ge=0)
    """What a worker keeps of the answers its conditional calls may have confirmed (the last
    one per GET endpoint that sent a validator), in MB of body; 0: no conditional calls."""
    log_level: LogLevel = "INFO"
    log_format: LogFormat = "text"
    """`json` writes one object per line with the structured fields (`action`, ids…)."""
    # The planner. Without an LLM base URL or key it runs the heuristic planner.
    llm_base_url: str | None = None
    """An OpenAI-compatible API, e.g. `http://127.0.0.1:8000/v1`; default: OpenAI's own."""
    llm_model: str = Field(default="gpt-4o-mini", min_length=1)
    llm_api_key: SecretStr | None = None
    llm_timeout_seconds: float = Field(default=60, gt=0)
    llm_attempts: int = Field(default=4, gt=0)
    """Tries per LLM call (429, 5xx, timeouts are retried, honouring Retry-After)."""
    planner_max_steps: int = Field(default=8, gt=0)
    planner_max_tokens: int = Field(default=30_000, gt=0)
    planner_poll_seconds: float = Field(default=5, gt=0)
    planner_batch_size: int = Field(default=10, gt=0)
    planner_history_runs: int = Field(default=20, gt=0)
    planner_min_look_again_seconds: float = Field(default=60, gt=0, le=86_400)
    """The soonest an analysis may ask to be looked at again (`next_analysis_in_seconds`)."""
    """Runs behind the health figures of a planner's prompt."""
    planner_lease_seconds: float = Field(default=300, gt=0)
    planner_backoff_seconds: float = Field(default=30, gt=0)
    planner_backoff_cap_seconds: float = Field(default=3600, gt=0)
    planner_max_pause_seconds: float = Field(default=86_400, gt=0)
    planner_max_changes_per_hour: int = Field(default=6, ge=0)
    planner_max_hint_ttl_seconds: float = Field(default=86_400, gt=0)
    planner_proposal_ttl_seconds: float = Field(default=3600, gt=0)
    rules_dwell_seconds: float = Field(default=120, ge=0, le=86_400)
    """How long a change a response rule made stands before a rule may replace it (a rule's
    own `dwell:` wins; `urgent: true` rules wait for none)."""
    planner_rejection_cooldown_seconds: float = Field(default=3600, ge=0)
    """How long an admin's rejection holds the same change back (a job's `rejection_cooldown`
    overrides it); 0: not at all."""
    # Search (`cronpilot search`, decision 0033): `wordllama` (the model its wheel ships),
    # `openai` (an OpenAI-compatible `/embeddings`), or `none` (lexical and graph only).
    search_embedder: Literal["wordllama", "openai", "none"] = "wordllama"
    search_embeddings_base_url: str | None = None
    """For `openai`; default: `llm_base_url` (and `llm_api_key` for the key)."""
    search_embeddings_model: str = Field(default="text-embedding-3-small", min_length=1)
    search_embeddings_timeout_seconds: float = Field(default=10, gt=0)
    planner_brief_tokens: int = Field(default=160, ge=0)
    """Tokens the brief may spend on sibling summaries, the most relevant first."""
    # The HTTP API (`cronpilot serve`).
    api_host: str = Field(default="127.0.0.1", min_length=1)
    """Where `serve` listens; any other than a loopback address needs TLS or --insecure-http."""
    api_port: int = Field(default=8080, ge=1, le=_MAX_PORT)
    api_tls_cert: Path | None = None
    """PEM certificate chain for HTTPS; with `api_tls_key`."""
    api_tls_key: Path | None = None
    # The MCP server (`cronpilot mcp`).
    mcp_token: SecretStr | None = None
    """An API token's secret: its scope decides which tools `mcp` offers; never logged."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            _SecretFiles(settings_cls),
            env_settings,
            dotenv_settings,
            file_secret_settings,
        )

    @property
    def llm_configured(self) -> bool:
        return self.llm_base_url is not None or self.llm_api_key is not None

    @field_validator("database_url", "database_listen_url")
    @classmethod
    def _async_database_url(cls, value: str | None) -> str | None:
        return None if value is None else async_database_url(value)

    @field_validator("allowed_networks", mode="before")
    @classmethod
    def _split_networks(cls, value: Any) -> Any:
        """`10.0.0.0/8,127.0.0.1` as well as a JSON list, the usual form for list settings."""
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                return json.loads(value)
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("allowed_networks")
    @classmethod
    def _normalise_networks(cls, value: list[str]) -> list[str]:
        return [str(ipaddress.ip_network(cidr, strict=False)) for cidr in value]

    @field_validator("signing_secret", "signing_secret_previous")
    @classmethod
    def _signing_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            secret_bytes(value.get_secret_value())
        return value

    @field_validator("signing_previous_until")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        """A time without a zone is UTC, as every time cronpilot writes."""
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    @field_validator("secret_key_file")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


def async_database_url(text: str) -> str:
    """`text` with the async driver cronpilot uses, or a `PydanticCustomError` saying why not.

    Users paste the URLs their hosting shows (`postgres://…`, `postgresql://…?sslmode=require`,
    `sqlite:///…`): those name no driver, so the async one is filled in. An explicit other
    driver is refused rather than silently swapped. Messages never repeat the URL, which may
    hold a password.
    """
    try:
        url = make_url(text)
    except (ArgumentError, ValueError):
        raise _url_error(f"not a database URL; expected e.g. {_URL_EXAMPLES}") from None
    backend, _, driver = url.drivername.partition("+")
    backend = "postgresql" if backend == "postgres" else backend
    if backend not in ASYNC_DRIVERS:
        raise _url_error(f"{backend!r} is not supported; use {_URL_EXAMPLES}")
    wanted = ASYNC_DRIVERS[backend]
    if driver not in ("", wanted):
        raise _url_error(f"driver {driver!r} is not supported; use {backend}+{wanted}://…")
    if url.port is not None and not 0 < url.port <= _MAX_PORT:
        raise _url_error(f"port {url.port} is out of range")
    normalised = url.set(drivername=f"{backend}+{wanted}")
    if backend == "postgresql":
        normalised = normalised.set(query=_asyncpg_query(url))
    if normalised == url:
        return text
    return normalised.render_as_string(hide_password=False)


def _asyncpg_query(url: URL) -> dict[str, str | tuple[str, ...]]:
    """libpq's `sslmode` (what hosting providers print) as asyncpg's `ssl`, and nothing asyncpg
    would refuse."""
    query = dict(url.query)
    if "sslmode" in query:
        query.setdefault("ssl", query.pop("sslmode"))
    for name, value in query.items():
        if name == "pgbouncer":
            if value not in _PGBOUNCER_VALUES:
                raise _url_error("pgbouncer must be true or false")
            continue
        if name not in _ASYNCPG_QUERY:
            allowed = ", ".join(sorted(_ASYNCPG_QUERY | {"pgbouncer"}))
            raise _url_error(f"query parameter {name!r} is not supported (use {allowed})")
        if name == "ssl" and value not in _SSL_MODES:
            raise _url_error(f"ssl/sslmode must be one of {', '.join(sorted(_SSL_MODES))}")
    return query


def _url_error(message: str) -> PydanticCustomError:
    # No context: the message is final, so braces in a user's text are not template fields.
    return PydanticCustomError("database_url", message)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment (overrides win); raises `InvalidConfig` naming the variable.

    Only pydantic's message is reported, never the rejected input, which may be a secret.
    """
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else "settings"
        raise InvalidConfig(f"{ENV_PREFIX}{field.upper()}", error["msg"]) from exc
