"""A generated catalog of endpoints with realistic names, descriptions, URL paths, output and
input fields and the graph between them (pipelines within a job, ids shared across jobs), and
intents written about it in other words than its own: deterministic (seeded), so that the
labelled set and `bench.search` read the same catalog everywhere.

Twenty-five business entities, eight actions each, per region: 1,000 endpoints over five
regions (`catalog(5)`), 10,000 over fifty (`catalog(50)`: the latency benchmark)."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from datetime import UTC, datetime

from cronpilot.domain.graph.graph import Edge, EdgeSource, EdgeType
from cronpilot.domain.search.search import EndpointText, endpoint_text

T0 = datetime(2030, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Entity:
    domain: str
    singular: str
    plural: str
    synonyms: tuple[str, ...]
    """What people call them in questions."""
    fields: tuple[str, ...]


ENTITIES = (
    Entity(
        "billing",
        "invoice",
        "invoices",
        ("bills", "statements"),
        ("invoice_id", "customer_id", "amount_due", "due_date", "currency"),
    ),
    Entity(
        "orders",
        "order",
        "orders",
        ("purchases", "baskets"),
        ("order_id", "customer_id", "order_total", "placed_at"),
    ),
    Entity(
        "payments",
        "payment",
        "payments",
        ("card charges", "transactions"),
        ("payment_id", "amount", "card_brand", "captured_at"),
    ),
    Entity(
        "refunds",
        "refund",
        "refunds",
        ("money sent back", "reimbursements"),
        ("refund_id", "payment_id", "refund_amount", "reason"),
    ),
    Entity(
        "shipping",
        "shipment",
        "shipments",
        ("parcels", "deliveries"),
        ("tracking_number", "carrier", "eta", "shipped_at"),
    ),
    Entity(
        "inventory",
        "stock level",
        "stock_levels",
        ("inventory", "goods on hand"),
        ("sku", "warehouse_id", "quantity_on_hand", "reorder_point"),
    ),
    Entity(
        "accounts",
        "user",
        "users",
        ("accounts", "members"),
        ("user_id", "email", "signup_at", "plan"),
    ),
    Entity(
        "support",
        "ticket",
        "tickets",
        ("complaints", "help requests"),
        ("ticket_id", "priority", "assignee", "sla_breached"),
    ),
    Entity(
        "marketing",
        "campaign",
        "campaigns",
        ("promotions", "ads"),
        ("campaign_id", "clicks", "impressions", "ad_spend"),
    ),
    Entity(
        "fraud",
        "fraud alert",
        "fraud_alerts",
        ("suspicious transactions", "scams"),
        ("alert_id", "risk_score", "fraud_rate", "merchant_id"),
    ),
    Entity(
        "people",
        "employee",
        "employees",
        ("staff", "workers"),
        ("employee_id", "department", "hired_at", "manager_id"),
    ),
    Entity(
        "analytics",
        "page view",
        "page_views",
        ("website traffic", "visits"),
        ("page_url", "sessions", "bounce_rate"),
    ),
    Entity(
        "infra",
        "server",
        "servers",
        ("hosts", "machines"),
        ("hostname", "cpu_usage", "memory_usage", "uptime_seconds"),
    ),
    Entity(
        "backups",
        "backup",
        "backups",
        ("snapshots", "disaster recovery copies"),
        ("backup_id", "size_bytes", "completed_at", "checksum"),
    ),
    Entity(
        "security",
        "certificate",
        "certificates",
        ("tls certs", "ssl certificates"),
        ("domain_name", "expires_at", "issuer"),
    ),
    Entity(
        "logistics",
        "warehouse",
        "warehouses",
        ("depots", "fulfilment centres"),
        ("warehouse_id", "capacity", "utilisation"),
    ),
    Entity(
        "crm",
        "lead",
        "leads",
        ("prospects", "potential customers"),
        ("lead_id", "lead_source", "lead_score", "owner_id"),
    ),
    Entity(
        "treasury",
        "exchange rate",
        "exchange_rates",
        ("fx rates", "currency conversion"),
        ("base_currency", "quote_currency", "rate"),
    ),
    Entity(
        "catalog",
        "product",
        "products",
        ("items for sale", "articles"),
        ("sku", "title", "list_price", "category"),
    ),
    Entity(
        "reviews",
        "review",
        "reviews",
        ("ratings", "customer feedback"),
        ("review_id", "stars", "product_sku"),
    ),
    Entity(
        "subscriptions",
        "subscription",
        "subscriptions",
        ("memberships", "recurring plans"),
        ("subscription_id", "renews_at", "churned", "mrr"),
    ),
    Entity(
        "email",
        "newsletter",
        "newsletters",
        ("mailings", "email blasts"),
        ("open_rate", "bounces", "unsubscribes"),
    ),
    Entity(
        "weather",
        "forecast",
        "forecasts",
        ("weather outlook", "meteorology"),
        ("temperature", "precipitation", "wind_speed"),
    ),
    Entity(
        "iot",
        "sensor reading",
        "sensor_readings",
        ("telemetry", "device measurements"),
        ("device_id", "humidity", "battery_level"),
    ),
    Entity(
        "payroll",
        "payslip",
        "payslips",
        ("pay stubs", "salary slips"),
        ("employee_id", "gross_pay", "net_pay", "pay_period"),
    ),
)


@dataclass(frozen=True)
class Action:
    name: str
    """`{p}` the entity's plural, `{s}` its singular (as identifiers)."""
    description: str
    asks: tuple[str, ...]
    """Intents about it: `{syn}` a synonym of the entity, `{region}` the region in words."""
    outputs: tuple[str, ...] = ()
    """Output fields besides the entity's."""
    inputs: tuple[str, ...] = ()
    entity_fields: bool = True


ACTIONS = (
    Action(
        "fetch_{p}",
        "Fetch new {P} created since the last cursor.",
        ("pull the latest {syn} in {region}", "which endpoint brings in recent {syn} for {region}"),
        ("next_cursor",),
        ("cursor",),
    ),
    Action(
        "validate_{p}",
        "Validate the batch of {P} that was fetched; malformed rows are rejected.",
        (
            "check the {syn} batch for bad rows ({region})",
            "reject broken {syn} records in {region}",
        ),
        ("rejected_rows", "valid_rows"),
        ("batch_id",),
        False,
    ),
    Action(
        "load_{p}",
        "Load the validated {P} into the data warehouse.",
        ("put {syn} into the warehouse for {region}", "copy {syn} to analytics in {region}"),
        ("rows_loaded",),
        ("batch_id",),
        False,
    ),
    Action(
        "count_{p}",
        "Count {P} by status, for the dashboard.",
        ("how many {syn} are there in {region}", "number of {syn} per status, {region}"),
        ("total", "by_status"),
        (),
        False,
    ),
    Action(
        "export_{p}",
        "Export {P} as a CSV file for the finance team.",
        ("spreadsheet of {syn} for accounting in {region}", "csv download of {syn}, {region}"),
        ("file_url", "row_count"),
        (),
        False,
    ),
    Action(
        "archive_{p}",
        "Archive {P} older than 90 days to cold storage.",
        ("move old {syn} to cold storage in {region}", "clean up ancient {syn} ({region})"),
        ("archived", "freed_bytes"),
        (),
        False,
    ),
    Action(
        "{s}_api_health",
        "Check that the {D} API answers within its latency budget.",
        ("is the {domain} service up in {region}", "latency of the {domain} api, {region}"),
        ("status", "latency_ms"),
        (),
        False,
    ),
    Action(
        "{s}_anomalies",
        "Watch {P} for anomalies against last week's baseline; alerts the on-call.",
        ("unusual spikes in {syn} for {region}", "alert me when {syn} look abnormal in {region}"),
        ("anomaly_score", "baseline", "alerting"),
    ),
)

REGIONS = (
    ("eu", "Europe"),
    ("us", "the United States"),
    ("apac", "Asia Pacific"),
    ("latam", "Latin America"),
    ("mea", "the Middle East and Africa"),
)
EXTRA_REGION_WORDS = (
    "north",
    "south",
    "east",
    "west",
    "central",
    "coastal",
    "alpine",
    "metro",
    "rural",
    "island",
)


def regions(count: int) -> list[tuple[str, str]]:
    """The first five real regions, then made-up districts (`eu_north`, …) up to `count`."""
    found = list(REGIONS[:count])
    for word in EXTRA_REGION_WORDS:
        for code, words in REGIONS:
            if len(found) >= count:
                return found
            found.append((f"{code}_{word}", f"{words} {word}"))
    return found


@dataclass(frozen=True)
class Catalog:
    texts: list[EndpointText]
    edges: list[Edge]
    intents: list[tuple[str, str]]
    """(intent, the endpoint that answers it)."""


def _ident(text: str) -> str:
    return text.replace(" ", "_")


def catalog(region_count: int = 5, intents: int = 60, seed: int = 24) -> Catalog:
    texts: list[EndpointText] = []
    edges: list[Edge] = []
    asks: list[tuple[str, str]] = []
    for code, words in regions(region_count):
        for entity in ENTITIES:
            job = f"{entity.domain}_{code}"
            described = f"{entity.domain.title()} for {words} ({code.upper()} customers)"
            names = {}
            for action in ACTIONS:
                name = action.name.format(p=_ident(entity.plural), s=_ident(entity.singular))
                names[action.name] = name
                ref = f"{job}/{name}"
                text = endpoint_text(
                    job=job,
                    job_description=described,
                    name=name,
                    description=action.description.format(
                        P=entity.plural.replace("_", " "), D=entity.domain
                    ),
                    url_path=f"/{code}/{entity.domain}/{name.replace('_', '-')}",
                    outputs=[*(entity.fields if action.entity_fields else ()), *action.outputs],
                    inputs=action.inputs,
                )
                texts.append(text)
                edges.append(_edge(job, ref, EdgeType.CONTAINS, EdgeSource.TEMPLATE))
                # One intent in the catalog's own words, one in a synonym's.
                own = entity.plural.replace("_", " ")
                asks += [
                    (ask.format(syn=syn, region=words, domain=entity.domain), ref)
                    for ask, syn in zip(action.asks, (own, entity.synonyms[0]), strict=True)
                ]
            pipeline = [names["fetch_{p}"], names["validate_{p}"], names["load_{p}"]]
            for up, down in itertools.pairwise(pipeline):
                for kind in (EdgeType.DEPENDENCY, EdgeType.PROVIDES):
                    edges.append(_edge(f"{job}/{up}", f"{job}/{down}", kind, EdgeSource.INFERRED))
            fetch = f"{job}/{names['fetch_{p}']}"
            for other in ("count_{p}", "export_{p}", "{s}_anomalies", "archive_{p}"):
                edges.append(
                    _edge(fetch, f"{job}/{names[other]}", EdgeType.SEQUENCE, EdgeSource.OBSERVED)
                )
        # Ids shared across a region's jobs: a customer's orders feed its invoices, and so on.
        for up, down in (
            ("orders", "billing"),
            ("payments", "refunds"),
            ("accounts", "subscriptions"),
            ("people", "payroll"),
            ("catalog", "reviews"),
            ("payments", "fraud"),
        ):
            up_entity = next(e for e in ENTITIES if e.domain == up)
            down_entity = next(e for e in ENTITIES if e.domain == down)
            edges.append(
                _edge(
                    f"{up}_{code}/fetch_{_ident(up_entity.plural)}",
                    f"{down}_{code}/fetch_{_ident(down_entity.plural)}",
                    EdgeType.PROVIDES,
                    EdgeSource.INFERRED,
                )
            )
    chosen = random.Random(seed).sample(asks, min(intents, len(asks)))
    return Catalog(texts, edges, chosen)


def _edge(a: str, b: str, kind: EdgeType, source: EdgeSource) -> Edge:
    return Edge(a, b, kind, source, 0, T0)
