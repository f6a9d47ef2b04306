"""Ports: what the workers need from the outside world. Adapters implement them; tests swap them.

One module per area, so that a part imports the ports it uses (`from cronpilot.domain.ports.claims
import ClaimRepository`); this package re-exports every name for the adapters, the use cases and
the tests (`docs/decisions/0039-ports-split.md`):

- `clock`: `Clock`, `Waker`; `dispatch`: `Dispatcher`, `Mailer`; `tracing`: `Tracer`, `Span`;
  `telemetry`: `Telemetry`; `cipher`: `SecretCipher`.
- One module per repository area: `catalog`, `claims`, `runs`, `dag` (with approval gates),
  `planner` (with `ChatModel`), `schemas`, `search` (with `Embedder`), `graph`,
  `notifications`, `workers`, `access`.
- `units`: `Repositories`, `Store`, `UnitOfWork`, `ReadingUnit` and their factories.
- `bundles`: the narrow views of a store that worker parts take (`SchedulerRepositories`, …).

Every repository method takes `now` from the caller's clock: no store decides the time itself,
so a fake clock drives memory, SQLite and PostgreSQL alike.

Each adapter names the port it implements as its base class (`class SqlClaims(ClaimRepository)`):
mypy then checks every method against the port where the adapter is defined, and a method it
lacks makes the class abstract, whether or not anything in the package hands it out as the
port. Tests' fakes may stay structural.
"""

from cronpilot.domain.ports.access import AccessRepository
from cronpilot.domain.ports.bundles import (
    NotifierRepositories,
    PlannerStore,
    SchedulerRepositories,
    ToolStore,
    WatchRepositories,
)
from cronpilot.domain.ports.catalog import (
    Applied,
    ApplyReport,
    CatalogFigures,
    CatalogRepository,
    JobDeclaration,
    StoredJob,
)
from cronpilot.domain.ports.cipher import SecretCipher
from cronpilot.domain.ports.claims import ClaimRepository
from cronpilot.domain.ports.clock import Clock, Waker
from cronpilot.domain.ports.dag import ApprovalRepository, DagRepository
from cronpilot.domain.ports.dispatch import Dispatcher, Mailer
from cronpilot.domain.ports.graph import GraphRepository
from cronpilot.domain.ports.notifications import NotificationRepository
from cronpilot.domain.ports.planner import ChatModel, PlannerRepository
from cronpilot.domain.ports.runs import RunFilter, RunRepository
from cronpilot.domain.ports.schemas import SchemaRepository
from cronpilot.domain.ports.search import Embedder, StoredVector, VectorRepository
from cronpilot.domain.ports.telemetry import Delivery, Telemetry, WorkerLoop
from cronpilot.domain.ports.tracing import Span, SpanValue, Tracer
from cronpilot.domain.ports.units import (
    ReadingFactory,
    ReadingUnit,
    Repositories,
    Store,
    UnitOfWork,
    UnitOfWorkFactory,
)
from cronpilot.domain.ports.workers import WorkerRepository

__all__ = [
    "AccessRepository",
    "Applied",
    "ApplyReport",
    "ApprovalRepository",
    "CatalogFigures",
    "CatalogRepository",
    "ChatModel",
    "ClaimRepository",
    "Clock",
    "DagRepository",
    "Delivery",
    "Dispatcher",
    "Embedder",
    "GraphRepository",
    "JobDeclaration",
    "Mailer",
    "NotificationRepository",
    "NotifierRepositories",
    "PlannerRepository",
    "PlannerStore",
    "ReadingFactory",
    "ReadingUnit",
    "Repositories",
    "RunFilter",
    "RunRepository",
    "SchedulerRepositories",
    "SchemaRepository",
    "SecretCipher",
    "Span",
    "SpanValue",
    "Store",
    "StoredJob",
    "StoredVector",
    "Telemetry",
    "ToolStore",
    "Tracer",
    "UnitOfWork",
    "UnitOfWorkFactory",
    "VectorRepository",
    "Waker",
    "WatchRepositories",
    "WorkerLoop",
    "WorkerRepository",
]
