"""Draw the import graph of cronpilot's layers and of the domain's areas, from the code.

    python scripts/import_graph.py          # rewrite the diagrams in docs/layout.md
    python scripts/import_graph.py --check  # exit 1 when docs/layout.md is out of date

Each diagram is a Mermaid flowchart between markers in docs/layout.md; an arrow `A --> B` says
that modules of A import modules of B, labelled with how many such imports there are. grimp
(import-linter's graph builder) reads the imports, so the picture is the one the contracts of
pyproject.toml judge.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import grimp

LAYOUT = Path(__file__).resolve().parents[1] / "docs" / "layout.md"
FRONT = (
    "cli",
    "api",
    "console",
    "mcp",
    "web",
    "views",
    "sql",
    "http",
    "llm",
    "search",
    "jobs_file",
)
LAYER_ORDER = ("harness", "adapters", "scheduler", "planner", "usecases", "runtime", "domain")


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 2 or parts[1] in ("migrations", "__init__"):
        return None
    if parts[1] == "adapters" and len(parts) > 2:
        return f"adapters.{parts[2]}" if parts[2] in FRONT else "adapters"
    return parts[1]


def _area(graph: grimp.ImportGraph) -> Callable[[str], str | None]:
    def area(module: str) -> str | None:
        parts = module.split(".")
        if parts[1:2] != ["domain"] or len(parts) < 3:
            return None
        return parts[2] if graph.find_children(".".join(parts[:3])) else "shared"

    return area


def _edges(
    graph: grimp.ImportGraph, group: Callable[[str], str | None]
) -> Counter[tuple[str, str]]:
    counted: Counter[tuple[str, str]] = Counter()
    for module in graph.modules:
        source = group(module)
        if source is None:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            target = group(imported)
            if target is not None and target != source:
                counted[source, target] += 1
    return counted


def _node(name: str) -> str:
    return name.replace(".", "_")


def _flowchart(counted: Counter[tuple[str, str]], rank: dict[str, int]) -> str:
    nodes = sorted({n for edge in counted for n in edge}, key=lambda n: (rank.get(n, 99), n))
    lines = ["```mermaid", "flowchart TD"]
    lines += [f'    {_node(n)}["{n}"]' for n in nodes]
    for (source, target), count in sorted(
        counted.items(), key=lambda e: (rank.get(e[0][0], 99), e)
    ):
        lines.append(f"    {_node(source)} -->|{count}| {_node(target)}")
    lines.append("```")
    return "\n".join(lines)


def diagrams() -> dict[str, str]:
    graph = grimp.build_graph("cronpilot", cache_dir=None)
    names = {*LAYER_ORDER, *(f"adapters.{front}" for front in FRONT)}
    layer_rank = {name: LAYER_ORDER.index(name.split(".")[0]) for name in names}
    return {
        "layers": _flowchart(_edges(graph, _layer), layer_rank),
        "domain": _flowchart(_edges(graph, _area(graph)), {}),
    }


def rendered(text: str) -> str:
    for name, chart in diagrams().items():
        start, end = f"<!-- import-graph:{name} -->", f"<!-- /import-graph:{name} -->"
        head, _, rest = text.partition(start)
        _, found, tail = rest.partition(end)
        if not found:
            raise SystemExit(f"docs/layout.md has no {start} … {end} block")
        text = f"{head}{start}\n{chart}\n{end}{tail}"
    return text


if __name__ == "__main__":
    current = LAYOUT.read_text(encoding="utf-8")
    wanted = rendered(current)
    if "--check" in sys.argv[1:]:
        if wanted != current:
            print("docs/layout.md: the import graph is out of date: python scripts/import_graph.py")
            sys.exit(1)
    else:
        LAYOUT.write_text(wanted, encoding="utf-8")
