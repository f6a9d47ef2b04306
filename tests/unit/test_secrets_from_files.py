"""Secrets from files and the environment: `${file:…}` and `${env:…}` in a jobs file (read at
apply, exported as written, never as their value) and the `CRONPILOT_*_FILE` settings; every
problem is one line naming the field or variable and the file, never what a file holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from cronpilot.adapters.jobs_export import export_document
from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.adapters.settings import ENV_PREFIX, FILE_SETTINGS, Settings, load_settings
from cronpilot.domain.alerts.notify_targets import TargetKind
from cronpilot.domain.errors import InvalidConfig
from cronpilot.domain.model import Reference
from cronpilot.domain.ports import JobDeclaration

NETWORKS = ["127.0.0.1/32"]
TOKEN = "tok-3f9a-never-printed"


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    (tmp_path / "token").write_text(TOKEN + "\n")
    (tmp_path / "routing_key").write_text("R0UT1NG")
    (tmp_path / "smtp").write_text("pa55w0rd\r\n")
    return tmp_path


def _document(folder: Path) -> str:
    return f"""\
jobs:
  - name: partner
    notify:
      targets:
        - kind: pagerduty
          routing_key: ${{file:{folder}/routing_key}}
    endpoints:
      - name: orders
        url: ${{env:PARTNER_URL}}/orders?page=1
        interval: 5m
        headers:
          Authorization: Bearer ${{file:{folder}/token}}
          Accept: application/json
      - name: mail
        url: https://api.example.com/mail
        interval: 5m
        notify:
          targets:
            - kind: email
              host: smtp.example.com
              from: cronpilot@example.com
              to: [oncall@example.com]
              username: cronpilot
              password: ${{file:{folder}/smtp}}
              starttls: true
"""


ENV = {"PARTNER_URL": "https://api.example.com/v2"}


def _parsed(text: str, source: str = "jobs.yaml") -> list[JobDeclaration]:
    return parse_declarations(text, source, NETWORKS, ENV, read_files=True)


def test_references_are_read_at_apply_and_remembered_where_they_stood(secrets: Path) -> None:
    [declaration] = _parsed(_document(secrets))
    orders, mail = declaration.endpoints

    assert orders.headers["Authorization"] == f"Bearer {TOKEN}"
    assert orders.url == "https://api.example.com/v2/orders?page=1"
    [target] = orders.notify_targets
    assert (target.kind, target.routing_key) == (TargetKind.PAGERDUTY, "R0UT1NG")
    assert mail.notify_targets[0].smtp is not None
    assert mail.notify_targets[0].smtp.password == "pa55w0rd"
    assert set(orders.references) == {
        Reference(("url",), "${env:PARTNER_URL}/orders?page=1"),
        Reference(("headers", "Authorization"), f"Bearer ${{file:{secrets}/token}}"),
        Reference(("notify", "targets", 0, "routing_key"), f"${{file:{secrets}/routing_key}}"),
    }
    # The job's targets are replaced by the endpoint's own: so is the reference among them.
    assert mail.references == (
        Reference(("notify", "targets", 0, "password"), f"${{file:{secrets}/smtp}}"),
    )


@pytest.mark.parametrize("with_secrets", [False, True])
def test_export_writes_the_references_back_never_the_values(
    secrets: Path, with_secrets: bool
) -> None:
    declarations = _parsed(_document(secrets))

    exported = export_document(declarations, with_secrets=with_secrets)

    for value in (TOKEN, "R0UT1NG", "pa55w0rd", "api.example.com/v2"):
        assert value not in exported
    assert f"Authorization: Bearer ${{file:{secrets}/token}}" in exported
    assert "PARTNER_ORDERS_AUTHORIZATION" not in exported
    again = _parsed(exported, "exported.yaml")
    assert [d.endpoints for d in again] == [d.endpoints for d in declarations]


def test_a_plain_variable_is_not_remembered(secrets: Path) -> None:
    text = _document(secrets).replace("${env:PARTNER_URL}", "${PARTNER_URL}")

    [declaration] = _parsed(text, "jobs.yaml")

    assert all(reference.at != ("url",) for reference in declaration.endpoints[0].references)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("${file:{folder}/absent}", "secret file {folder}/absent does not exist"),
        ("${file:{folder}}", "secret file {folder} is a directory"),
        ("${env:NOT_SET_ANYWHERE}", "environment variable NOT_SET_ANYWHERE is not set"),
        ("${env:not a name}", "'not a name' is not an environment variable name"),
        (
            "${vault:{folder}/token}",
            "unknown reference ${vault:…}; use ${env:NAME} or ${file:PATH}",
        ),
    ],
)
def test_a_reference_that_cannot_be_read_is_one_line_naming_the_field_and_file(
    secrets: Path, reference: str, message: str
) -> None:
    def at(folder: str) -> str:
        return folder.replace("{folder}", str(secrets))

    text = _document(secrets).replace(f"${{file:{secrets}/token}}", at(reference))

    with pytest.raises(InvalidConfig) as refused:
        _parsed(text, "jobs.yaml")

    assert str(refused.value) == (
        "jobs.yaml: job 'partner' endpoint 'orders' field 'headers.Authorization': " + at(message)
    )
    assert TOKEN not in str(refused.value)


def test_a_file_too_large_or_not_text_is_refused_without_its_content(secrets: Path) -> None:
    (secrets / "token").write_bytes(b"\xff\xfe" + TOKEN.encode())

    with pytest.raises(InvalidConfig) as refused:
        _parsed(_document(secrets))

    assert str(refused.value).endswith(f"secret file {secrets}/token is not UTF-8 text")
    assert TOKEN not in str(refused.value)


def test_a_document_sent_to_the_server_reads_no_file(secrets: Path) -> None:
    with pytest.raises(InvalidConfig) as refused:
        parse_declarations(_document(secrets), "document", NETWORKS, ENV)

    assert str(refused.value) == (
        "document: job 'partner' field 'notify.targets[0].routing_key': "
        "${file:…} is read only by `cronpilot apply -f`, on its machine"
    )


# --- settings ---------------------------------------------------------------------------------


def test_every_secret_setting_can_be_read_from_a_file() -> None:
    secret = {
        name
        for name, field in Settings.model_fields.items()
        if field.annotation is not None and SecretStr in getattr(field.annotation, "__args__", ())
    }
    # The secret key has a file setting of its own.
    assert secret - {"secret_key"} <= set(FILE_SETTINGS)
    assert {"database_url", "database_listen_url"} <= set(FILE_SETTINGS)


def test_a_file_setting_gives_the_file_s_text(
    secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(f"{ENV_PREFIX}LLM_API_KEY_FILE", str(secrets / "token"))
    monkeypatch.setenv(f"{ENV_PREFIX}DATABASE_URL_FILE", str(secrets / "routing_key"))
    (secrets / "routing_key").write_text("postgresql://cronpilot:pw@db/cronpilot\n")

    settings = load_settings(_env_file=None)

    assert settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == TOKEN
    assert settings.database_url == "postgresql+asyncpg://cronpilot:pw@db/cronpilot"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("absent", "secret file {folder}/absent does not exist"),
        ("", "secret file {folder} is a directory"),
    ],
)
def test_a_file_setting_that_cannot_be_read_names_the_variable_and_file(
    secrets: Path, monkeypatch: pytest.MonkeyPatch, name: str, message: str
) -> None:
    path = str(secrets / name) if name else str(secrets)
    monkeypatch.setenv(f"{ENV_PREFIX}MCP_TOKEN_FILE", path)

    with pytest.raises(InvalidConfig) as refused:
        load_settings(_env_file=None)

    assert str(refused.value) == (f"{ENV_PREFIX}MCP_TOKEN_FILE: " + message.format(folder=secrets))


def test_a_setting_and_its_file_together_are_refused(
    secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(f"{ENV_PREFIX}SIGNING_SECRET", "whsec_c2VjcmV0")
    monkeypatch.setenv(f"{ENV_PREFIX}SIGNING_SECRET_FILE", str(secrets / "token"))

    with pytest.raises(InvalidConfig) as refused:
        load_settings(_env_file=None)

    assert "set CRONPILOT_SIGNING_SECRET or CRONPILOT_SIGNING_SECRET_FILE, not both" in str(
        refused.value
    )
