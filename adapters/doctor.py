"""`cronpilot doctor`: a deployment checked in one pass, each line OK or what to fix.

The database's reachability and revision are `/readyz`'s own checks (`ReadinessProbe`); the
others read the settings, the database's clock and workers, and the LLM server. A check that
cannot be made because another failed says so rather than guessing. Nothing here writes but
what opening the store writes on a database's first use (its secret key check), and no line
holds a secret: errors are named by kind, never by message (a driver's may hold the URL).
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import openai
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.health import CHECK_TIMEOUT_SECONDS, Check, ReadinessProbe
from cronpilot.adapters.llm.openai_client import NO_KEY, described
from cronpilot.adapters.settings import Settings
from cronpilot.adapters.sql import open_sql_store
from cronpilot.adapters.sql.engine import create_engine
from cronpilot.domain.errors import CronpilotError, InvalidConfig
from cronpilot.domain.ports import SecretCipher
from cronpilot.usecases.workers import active_workers

MAX_SKEW_SECONDS = 2.0
"""The most this machine's clock may differ from the database's: slots, leases and heartbeats
are stamped by each worker's clock and compared across workers through the database."""
METADATA_ADDRESS = ipaddress.ip_address("169.254.169.254")
"""The cloud metadata service: a network that holds it lets a declared URL read credentials."""
LLM_TIMEOUT_SECONDS = 5.0

Clock = Callable[[], datetime]


async def examine(settings: Settings, now: Clock = lambda: datetime.now(UTC)) -> list[Check]:
    """Every check, in the order the table shows them."""
    database, migrations = (await ReadinessProbe(settings.database_url).check()).checks
    cipher, key = _secret_key(settings)
    checks = [database, migrations, key, _allowed_networks(settings.allowed_networks)]
    checks.append(
        await _clock_skew(settings.database_url, now)
        if database.ok
        else Check("clock skew", False, "unknown: the database cannot be reached")
    )
    if database.ok and migrations.ok:
        key_at_database, workers = await _store_checks(settings, cipher, now)
        if key.ok:
            checks[2] = key_at_database
    else:
        workers = Check("workers", False, "unknown: the database is not at head")
    checks.append(workers)
    if settings.llm_configured:
        checks.append(await _llm(settings))
    return checks


def _secret_key(settings: Settings) -> tuple[SecretCipher | None, Check]:
    """The cipher of the configured key, without making a key file as a command would."""
    name = "secret key"
    if settings.secret_key is not None:
        key, where = settings.secret_key.get_secret_value(), "CRONPILOT_SECRET_KEY"
    else:
        path = settings.secret_key_file
        where = f"key file {path}"
        try:
            key = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return None, Check(
                name,
                False,
                f"not set, and no {where}: set CRONPILOT_SECRET_KEY to one key shared by every "
                "worker (`python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'`)",
            )
        except (OSError, UnicodeError) as error:
            return None, Check(name, False, f"cannot read {where} ({type(error).__name__})")
    try:
        cipher = FernetCipher(key)
    except (ValueError, UnicodeError):
        return None, Check(name, False, f"{where} is not a Fernet key (32 url-safe base64 bytes)")
    return cipher, Check(name, True, f"{where} is a valid key")


async def _store_checks(
    settings: Settings, cipher: SecretCipher | None, now: Clock
) -> tuple[Check, Check]:
    """Whether the key opens the database's secrets, and the workers heard from lately."""
    try:
        store = await open_sql_store(settings.database_url, cipher, pool_size=1)
    except InvalidConfig as error:
        return Check("secret key", False, error.reason), Check(
            "workers", False, "unknown: the store refused the key"
        )
    except CronpilotError as error:
        why = f"unknown: the store did not open ({type(error).__name__})"
        return Check("secret key", False, why), Check("workers", False, why)
    try:
        found = await active_workers(store.reading, now(), settings.worker_stale_seconds)
    finally:
        await store.close()
    key = Check("secret key", True, "opens this database's secrets")
    if not found:
        return key, Check(
            "workers",
            False,
            f"no scheduler worker heard from in {settings.worker_stale_seconds:g} s: "
            "start one (`cronpilot scheduler`)",
        )
    hosts = sorted({activity.worker.host for activity in found})
    return key, Check("workers", True, f"{len(found)} alive on {', '.join(hosts)}")


def _allowed_networks(networks: list[str]) -> Check:
    """`CRONPILOT_ALLOWED_NETWORKS` lets declared URLs reach private addresses: sane when it
    opens neither every address nor the cloud metadata service."""
    name = "allowed networks"
    parsed = [ipaddress.ip_network(cidr) for cidr in networks]
    everything = [str(n) for n in parsed if n.prefixlen == 0]
    if everything:
        return Check(
            name,
            False,
            f"{', '.join(everything)} lets declared URLs reach every address: "
            "list only the private networks endpoints live in",
        )
    metadata = [str(n) for n in parsed if METADATA_ADDRESS in n]
    if metadata:
        return Check(
            name,
            False,
            f"{', '.join(metadata)} holds the cloud metadata address {METADATA_ADDRESS}: "
            "narrow it so that it does not",
        )
    if not parsed:
        return Check(name, True, "none: public addresses only")
    return Check(name, True, ", ".join(str(n) for n in parsed))


async def _clock_skew(url: str, now: Clock) -> Check:
    """This machine's clock against the database's, read on a connection of its own; half the
    round trip is the reading's uncertainty."""
    name = "clock skew"
    if make_url(url).get_backend_name() == "sqlite":
        return Check(name, True, "none: SQLite reads this machine's clock")
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            before = now()
            started = time.monotonic()
            answered = await asyncio.wait_for(
                conn.execute(text("SELECT clock_timestamp()")), CHECK_TIMEOUT_SECONDS
            )
            trip = time.monotonic() - started
            database: datetime = answered.scalar_one()
    except (TimeoutError, SQLAlchemyError, OSError) as error:
        return Check(name, False, f"cannot read the database's clock ({type(error).__name__})")
    finally:
        await engine.dispose()
    return skew_check(database - before, trip)


def skew_check(offset: timedelta, trip: float) -> Check:
    """The verdict on the database's clock being `offset` ahead of this machine's at the start
    of a round trip of `trip` seconds."""
    skew = offset.total_seconds() - trip / 2
    shown = f"{skew:+.3f} s (± {trip / 2:.3f} s)"
    if abs(skew) > MAX_SKEW_SECONDS:
        return Check(
            "clock skew",
            False,
            f"{shown} against the database, over {MAX_SKEW_SECONDS:g} s: "
            "synchronise this machine's clock (NTP)",
        )
    return Check("clock skew", True, f"{shown} against the database")


async def _llm(settings: Settings) -> Check:
    """The planner's LLM server answers `/models` with the key given, and offers the model."""
    name = "llm"
    client = openai.AsyncOpenAI(
        base_url=settings.llm_base_url,
        api_key=NO_KEY if settings.llm_api_key is None else settings.llm_api_key.get_secret_value(),
        timeout=LLM_TIMEOUT_SECONDS,
        max_retries=0,
    )
    try:
        offered = [model.id async for model in client.models.list()]
    except openai.NotFoundError:
        # A server without `/models` (some local ones) answered: it is there.
        return Check(name, True, f"answers (no model list); model {settings.llm_model}")
    except (openai.AuthenticationError, openai.PermissionDeniedError):
        return Check(name, False, "the server refused the key: check CRONPILOT_LLM_API_KEY")
    except openai.OpenAIError as error:
        return Check(name, False, f"{described(error)}: check CRONPILOT_LLM_BASE_URL")
    finally:
        await client.close()
    if settings.llm_model not in offered:
        listed = ", ".join(offered[:5]) or "none"
        return Check(
            name,
            False,
            f"the server offers no model {settings.llm_model!r} (it offers {listed}): "
            "check CRONPILOT_LLM_MODEL",
        )
    return Check(name, True, f"answers and offers {settings.llm_model}")
