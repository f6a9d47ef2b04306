"""Plain-language questions about the example jobs (`adapters/examples/jobs.yaml`), each with
the endpoint that answers it: part of the labelled set (`tests/integration/search/labelled.py`)."""

from __future__ import annotations

EXAMPLE_QUESTIONS: tuple[tuple[str, str], ...] = (
    ("which endpoint tells me the fraud rate?", "flash-sale/fraud_score"),
    ("who looks into suspicious orders during the sale", "flash-sale/investigator"),
    ("get the new orders", "etl/fetch"),
    ("clean the batch of orders that was fetched", "etl/transform"),
    ("put the orders into the analytics warehouse", "etl/load"),
    ("is the european region up", "health/eu"),
    ("standby for the us region", "health/us_failover"),
    ("how many items are waiting in the queue", "queue/depth"),
    ("process the items of the work queue", "queue/processor"),
    ("how much are we spending on the cloud this month", "billing/usage"),
    ("delete idle volumes to save money", "billing/cleanup"),
    ("health check of the ap region", "health/ap"),
    ("failover for europe", "health/eu_failover"),
    ("projected spend against the budget", "billing/usage"),
    ("how deep is the queue", "queue/depth"),
    ("rejected rows in the transformed batch", "etl/transform"),
    ("fraud score", "flash-sale/fraud_score"),
    ("is the us region healthy", "health/us"),
    ("ap standby", "health/ap_failover"),
    ("load the batch into orders_fact", "etl/load"),
)
