"""deploy/kubernetes/: the kustomize base and overlay, rendered offline (kubectl kustomize, or
each manifest file alone where neither kubectl nor kustomize is installed), validated with
kubernetes-validate, and every probe wired to the port that process serves `/healthz` and
`/readyz` on."""

from __future__ import annotations

import copy
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.e2e.deploy.cli import accepts

ROOT = Path(__file__).resolve().parents[3]
KUBERNETES = ROOT / "deploy" / "kubernetes"
LAYOUTS = [KUBERNETES / "base", KUBERNETES / "overlays" / "production"]
# The oldest Kubernetes the manifests are for, and the newest kubernetes-validate knows.
VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def _renderer() -> list[str] | None:
    kustomize = shutil.which("kustomize")
    if kustomize is not None:
        return [kustomize, "build"]
    kubectl = shutil.which("kubectl")
    return None if kubectl is None else [kubectl, "kustomize"]


def _rendered(layout: Path) -> list[dict[str, Any]]:
    """The manifests of `layout`: rendered, or without a renderer each file of it and of the
    layouts it builds on, as written (patches and image names not applied)."""
    renderer = _renderer()
    if renderer is None:
        return _as_written(layout)
    done = subprocess.run(
        [*renderer, str(layout)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return list(yaml.safe_load_all(done.stdout))


def _as_written(layout: Path) -> list[dict[str, Any]]:
    resources = yaml.safe_load((layout / "kustomization.yaml").read_text())["resources"]
    return [
        doc
        for resource in resources
        for doc in (
            _as_written(layout / resource)
            if (layout / resource).is_dir()
            else yaml.safe_load_all((layout / resource).read_text())
        )
    ]


@pytest.fixture(scope="module", params=LAYOUTS, ids=lambda layout: layout.name)
def manifests(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return _rendered(request.param)


def _of_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in manifests if doc["kind"] == kind}


def test_every_manifest_is_valid_kubernetes(manifests: list[dict[str, Any]]) -> None:
    assert manifests
    for doc in manifests:
        for version in VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)


def test_a_misspelt_field_is_refused() -> None:
    # The validation above is strict: a probe under a wrong name would be silently ignored by a
    # lenient check, and the pod never probed.
    scheduler = _of_kind(_rendered(LAYOUTS[0]), "Deployment")["cronpilot-scheduler"]
    broken = copy.deepcopy(scheduler)
    container = broken["spec"]["template"]["spec"]["containers"][0]
    container["livenesProbe"] = container.pop("livenessProbe")

    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[0], strict=True)


def _settings(manifests: list[dict[str, Any]]) -> dict[str, str]:
    data: dict[str, str] = _of_kind(manifests, "ConfigMap")["cronpilot"]["data"]
    return data


def _served_port(container: dict[str, Any], settings: dict[str, str]) -> int:
    """The port the container's cronpilot serves its probes on: `serve`'s --port, or a
    worker's CRONPILOT_METRICS_PORT."""
    args = container["args"]
    if args[0] == "serve":
        return int(args[args.index("--port") + 1])
    return int(settings["CRONPILOT_METRICS_PORT"])


def test_probes_ask_healthz_and_readyz_where_the_process_serves_them(
    manifests: list[dict[str, Any]],
) -> None:
    settings = _settings(manifests)
    deployments = _of_kind(manifests, "Deployment")
    assert set(deployments) == {"cronpilot-scheduler", "cronpilot-planner", "cronpilot-api"}
    for deployment in deployments.values():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        probes = {
            kind: (container[kind]["httpGet"]["path"], ports[container[kind]["httpGet"]["port"]])
            for kind in ("livenessProbe", "readinessProbe")
        }
        served = _served_port(container, settings)

        assert probes == {
            "livenessProbe": ("/healthz", served),
            "readinessProbe": ("/readyz", served),
        }
        # Kubernetes probes from outside the pod: the workers' probe server listens on every
        # address of the pod, not on its default loopback.
        assert settings["CRONPILOT_METRICS_HOST"] == "0.0.0.0"


def test_every_container_runs_a_real_command_as_non_root(manifests: list[dict[str, Any]]) -> None:
    templates = [
        doc["spec"]["template"]["spec"] for doc in manifests if doc["kind"] in ("Deployment", "Job")
    ]
    assert len(templates) == 4
    for template in templates:
        assert template["securityContext"]["runAsNonRoot"] is True
        for container in template["containers"]:
            assert accepts(container["args"]), container["args"]
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            assert {
                ref["secretRef"]["name"] for ref in container["envFrom"] if "secretRef" in ref
            } == {"cronpilot"}


def test_the_overlay_names_this_release_s_image() -> None:
    if _renderer() is None:
        pytest.skip("neither kustomize nor kubectl is installed to apply the overlay")
    images = {
        container["image"]
        for doc in _rendered(LAYOUTS[1])
        if doc["kind"] in ("Deployment", "Job")
        for container in doc["spec"]["template"]["spec"]["containers"]
    }
    assert images == {f"registry.example.com/cronpilot:{VERSION}"}
