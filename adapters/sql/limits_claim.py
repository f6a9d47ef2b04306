"""Limits per target in the claim (docs/decisions/0050-limits-in-the-claim.md).

A claim lets a limited endpoint go only as far as its key allows
(`domain.schedule.limits.decide_limits`). On PostgreSQL that decision is part of the one claim
statement (`granted_postgres`): its candidates, each key's calls in flight (`in_flight`), the
token bucket, and a write of the key's row that takes effect only while the row is still at the
version the statement read. Every claim that lets a call of a key go bumps that version, so a
claimer whose snapshot misses another's leases of the key (READ COMMITTED: one snapshot per
statement) takes none of it this time instead of exceeding the limit. SQLite's one writer reads and
decides in Python (`allowed_sqlite`). Neither path costs anything while no endpoint names a limit:
the candidates come from `LIMITED_INDEX`, empty then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Float,
    Integer,
    Interval,
    and_,
    bindparam,
    case,
    cast,
    exists,
    extract,
    func,
    literal,
    null,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from cronpilot.adapters.sql.tables import (
    HOLDS_LEASE,
    IS_QUEUED,
    IS_RUNNING,
    UtcDateTime,
    endpoints,
    limits,
    run_queue,
)
from cronpilot.domain.schedule.limits import (
    RECHECK_SECONDS,
    TOKEN_EPSILON,
    Candidate,
    HoldReason,
    Limit,
    LimitState,
    LimitStatus,
    Rate,
    decide_limits,
)


def state_from_row(row: Mapping[Any, Any]) -> LimitState:
    rate = None
    if row["rate_calls"] is not None:
        rate = Rate(row["rate_calls"], row["rate_seconds"])
    limit = Limit(row["key"], row["concurrency"], rate, row["burst"])
    reason = row["hold_reason"]
    return LimitState(
        limit,
        tokens=row["tokens"],
        refilled_at=row["refilled_at"],
        version=row["version"],
        held=row["held"],
        hold_reason=None if reason is None else HoldReason(reason),
        held_at=row["held_at"],
        open_at=row["open_at"],
    )


def _bounds(limit: Limit) -> dict[str, Any]:
    return {
        "concurrency": limit.concurrency,
        "rate_calls": None if limit.rate is None else limit.rate.calls,
        "rate_seconds": None if limit.rate is None else limit.rate.per_seconds,
        "burst": limit.burst,
    }


def limit_state_values(state: LimitState) -> dict[str, Any]:
    return {
        "tokens": state.tokens,
        "refilled_at": state.refilled_at,
        "version": state.version,
        "held": state.held,
        "hold_reason": None if state.hold_reason is None else state.hold_reason.value,
        "held_at": state.held_at,
        "open_at": state.open_at,
    }


async def store_limits(conn: AsyncConnection, declared: Sequence[Limit]) -> None:
    """Store each declared key's bounds, keeping what claims recorded on it (a lowered burst
    caps the tokens at the next claim)."""
    for limit in {limit.key: limit for limit in declared}.values():
        found = await conn.execute(
            update(limits).where(limits.c.key == limit.key).values(_bounds(limit))
        )
        if found.rowcount == 0:
            fresh = limit_state_values(LimitState(limit))
            await conn.execute(limits.insert().values(key=limit.key, **_bounds(limit), **fresh))


def in_flight(of_keys: Any) -> Any:
    """`domain.schedule.limits.calls_in_flight` in SQL, for the keys `of_keys` selects: a
    subquery of (`key`, `n`), each key's leased endpoints plus its running runs that hold their
    own lease (`overlap: allow`, however many of one endpoint run at once)."""
    leased = select(endpoints.c.limit_key.label("key")).where(
        endpoints.c.limit_key.in_(of_keys), endpoints.c.lease_owner.isnot(None)
    )
    alone = (
        select(endpoints.c.limit_key.label("key"))
        .join(run_queue, run_queue.c.endpoint_id == endpoints.c.id)
        .where(endpoints.c.limit_key.in_(of_keys), HOLDS_LEASE, IS_RUNNING)
    )
    calls = leased.union_all(alone).subquery("lim_calls")
    return select(calls.c.key, func.count().label("n")).group_by(calls.c.key).subquery("lim_flight")


async def limit_statuses(conn: AsyncConnection) -> list[LimitStatus]:
    flight = in_flight(select(limits.c.key))
    rows = await conn.execute(
        select(limits, func.coalesce(flight.c.n, 0).label("in_flight"))
        .outerjoin(flight, flight.c.key == limits.c.key)
        .order_by(limits.c.key)
    )
    return [LimitStatus(state_from_row(row), row["in_flight"]) for row in rows.mappings()]


async def allowed_sqlite(
    conn: AsyncConnection, due_by: datetime, now: datetime, limit: int, job_holds: Any
) -> Any:
    """SQLite's claim (one writer: nothing interleaves): decide in Python which limited
    endpoints may go, store the keys' new states, and return the condition a candidate row of
    `endpoints` must meet (unlimited, or allowed)."""
    rows = (await conn.execute(_candidates(due_by, limit, job_holds))).all()
    if not rows:
        return endpoints.c.limit_key.is_(None)
    keys = sorted({row.key for row in rows})
    states = {
        row["key"]: state_from_row(row)
        for row in (await conn.execute(select(limits).where(limits.c.key.in_(keys)))).mappings()
    }
    flight = await conn.execute(select(in_flight(keys)))
    candidates = [Candidate(row.id, row.key, row.due_at) for row in rows]
    counts: dict[str, int] = {row[0]: row[1] for row in flight}
    decision = decide_limits(candidates, states, counts, limit, now)
    for state in decision.changed:
        await conn.execute(
            update(limits).where(limits.c.key == state.key).values(limit_state_values(state))
        )
    return or_(endpoints.c.limit_key.is_(None), endpoints.c.id.in_(sorted(decision.allowed)))


def after_hold(at: Any) -> Any:
    """`domain.schedule.limits.after_hold` in SQL, on a row of `endpoints` outer-joined with its
    limit: `at`, or when its key's hold may open if later."""
    return case((limits.c.open_at > at, limits.c.open_at), else_=at)


def _candidates(due_by: Any, limit: Any, job_holds: Any) -> Any:
    """`domain.schedule.limits.limited_candidates` in SQL, the first `limit` of them (earliest due,
    then id): served by `LIMITED_INDEX`. `job_holds` is the claim's test of its job's pause."""
    queued_due = (
        select(func.min(run_queue.c.due_at))
        .where(IS_QUEUED, run_queue.c.endpoint_id == endpoints.c.id, run_queue.c.due_at <= due_by)
        .scalar_subquery()
    )
    slot = case((endpoints.c.next_run_at <= due_by, endpoints.c.next_run_at), else_=null())
    # The earlier of the two, either of which may be NULL (spelt so for both dialects).
    due_at = case(
        (queued_due.is_(None), slot),
        (slot.is_(None), queued_due),
        (queued_due < slot, queued_due),
        else_=slot,
    ).label("due_at")
    return (
        select(endpoints.c.id, endpoints.c.limit_key.label("key"), due_at)
        .where(
            endpoints.c.limit_key.isnot(None),
            endpoints.c.lease_owner.is_(None),
            or_(
                endpoints.c.next_run_at <= due_by,
                exists().where(
                    IS_QUEUED,
                    run_queue.c.endpoint_id == endpoints.c.id,
                    run_queue.c.due_at <= due_by,
                ),
            ),
            ~job_holds,
        )
        .order_by(due_at, endpoints.c.id)
        .limit(limit)
    )


def granted_postgres(job_holds: Any) -> Any:
    """The CTE of the limited endpoints a PostgreSQL claim may take (column `id`), writing the
    keys' rows on the way: `domain.schedule.limits.decide_limits` in SQL, with bound parameters
    `now`, `due_by` and `limit`.

        WITH cand AS (<the first :limit limited candidates>),
             ranked AS (SELECT id, key, row_number() OVER (PARTITION BY key ORDER BY due_at, id)),
             wanted AS (SELECT key, count(*) FROM cand GROUP BY key),
             decided AS (SELECT limits.*, wanted, <granted, the bucket and the hold after>
                         FROM limits JOIN wanted ... LEFT JOIN <in_flight per key>),
             written AS (UPDATE limits SET <the decided state> FROM decided
                         WHERE limits.key = decided.key AND <it changed>
                         AND (limits.version = decided.version OR decided.granted = 0)
                         RETURNING limits.key)
        SELECT ranked.id FROM ranked LEFT JOIN decided ... WHERE decided.key IS NULL
            OR (ranked.rank <= decided.granted AND decided.key IN (SELECT key FROM written))

    A row another claim wrote since this statement's snapshot fails the version test (READ
    COMMITTED re-reads the row it waited for): this claim grants none of that key. A hold
    alone (nothing granted) writes only the hold, keeping the bucket as the row has it."""
    now = bindparam("now", type_=UtcDateTime)
    due_by = bindparam("due_by", type_=UtcDateTime)
    cand = _candidates(due_by, bindparam("limit", type_=Integer), job_holds).cte("lim_cand")
    ranked = select(
        cand.c.id,
        cand.c.key,
        func.row_number()
        .over(partition_by=cand.c.key, order_by=(cand.c.due_at, cand.c.id))
        .label("rank"),
    ).cte("lim_ranked")
    wanted = select(cand.c.key, func.count().label("wanted")).group_by(cand.c.key).cte("lim_wanted")
    flight = in_flight(select(wanted.c.key))
    decided = _decided(wanted, flight, now).cte("lim_decided")
    d = decided.c
    granting = d.granted > 0
    written = (
        update(limits)
        .where(
            limits.c.key == d.key,
            d.changed,
            or_(limits.c.version == d.version, d.granted == 0),
        )
        .values(
            version=case((granting, d.new_version), else_=limits.c.version),
            tokens=case((granting, d.new_tokens), else_=limits.c.tokens),
            refilled_at=case((granting, d.new_refilled_at), else_=limits.c.refilled_at),
            held=d.new_held,
            hold_reason=d.new_hold_reason,
            held_at=d.new_held_at,
            open_at=d.new_open_at,
        )
        .returning(limits.c.key)
        .cte("lim_written")
    )
    return (
        select(ranked.c.id)
        .select_from(ranked.outerjoin(decided, decided.c.key == ranked.c.key))
        .where(
            or_(
                decided.c.key.is_(None),
                and_(ranked.c.rank <= decided.c.granted, decided.c.key.in_(select(written.c.key))),
            )
        )
        .cte("lim_granted")
    )


def _seconds(value: Any) -> Any:
    return func.make_interval(0, 0, 0, 0, 0, 0, value, type_=Interval)


def _decided(wanted: Any, flight: Any, now: Any) -> Any:
    """Each wanted key's row with `domain.schedule.limits.grant`'s outcome: `granted`, `changed` and
    the `new_*` state."""
    lim = limits.c
    elapsed = func.greatest(extract("epoch", now - lim.refilled_at), 0.0)
    per_second = cast(lim.rate_calls, Float) / lim.rate_seconds
    tokens = case(
        (lim.rate_calls.is_(None), null()),
        (or_(lim.tokens.is_(None), lim.refilled_at.is_(None)), cast(lim.burst, Float)),
        else_=func.least(cast(lim.burst, Float), lim.tokens + elapsed * per_second),
    )
    room = case(
        (lim.concurrency.is_(None), null()),
        else_=func.greatest(lim.concurrency - func.coalesce(flight.c.n, 0), 0),
    )
    whole = cast(func.floor(tokens + TOKEN_EPSILON), Integer)
    inner = (
        select(
            *limits.c,
            wanted.c.wanted,
            tokens.label("avail"),
            room.label("room"),
            whole.label("whole"),
            func.least(wanted.c.wanted, room, whole).label("granted"),
        )
        .select_from(
            limits.join(wanted, wanted.c.key == lim.key).outerjoin(flight, flight.c.key == lim.key)
        )
        .subquery("lim_grant")
    )
    g = inner.c
    held = g.wanted - g.granted
    reason = case(
        (g.whole < func.least(g.wanted, g.room), literal(HoldReason.RATE.value)),
        (g.room < g.wanted, literal(HoldReason.CONCURRENCY.value)),
        else_=null(),
    )
    granting = g.granted > 0
    rated = and_(granting, g.rate_calls.isnot(None))
    new_tokens = case((rated, g.avail - g.granted), else_=g.tokens)
    new_refilled = case(
        (rated, func.greatest(func.coalesce(g.refilled_at, now), now)), else_=g.refilled_at
    )
    missing = (1.0 - (g.avail - g.granted)) / (cast(g.rate_calls, Float) / g.rate_seconds)
    new_open = case(
        (held <= 0, null()),
        (reason == HoldReason.RATE.value, now + _seconds(missing)),
        else_=now + _seconds(literal(RECHECK_SECONDS)),
    )
    new_state = (
        case((granting, g.version + 1), else_=g.version).label("new_version"),
        new_tokens.label("new_tokens"),
        new_refilled.label("new_refilled_at"),
        held.label("new_held"),
        case((held > 0, reason), else_=g.hold_reason).label("new_hold_reason"),
        case((and_(held > 0, g.held > 0), g.held_at), (held > 0, now), else_=g.held_at).label(
            "new_held_at"
        ),
        new_open.label("new_open_at"),
    )
    old = tuple_(g.version, g.tokens, g.refilled_at, g.held, g.hold_reason, g.held_at, g.open_at)
    new = tuple_(*(column.element for column in new_state))
    return select(
        g.key,
        g.version,
        g.granted,
        old.is_distinct_from(new).label("changed"),
        *new_state,
    )
