"""Token economy, measured: the five use cases run twice against the scripted OpenAI-compatible
server — once with the query tools (the model fetches fields on demand), once with the latest
responses of the endpoint and its siblings pasted into the prompt — and the prompt and
completion tokens per analysis are printed from the server's usage accounting.

With the break-even body size: pasting costs a token per `CHARS_PER_TOKEN` characters of each of
the job's bodies on every request, the tools mode (summaries of at most a line, fields on
demand) about the same whatever their size; so from the measured figures, the two cost the
same at `mean body + CHARS_PER_TOKEN * (tools - pasted) / (requests * bodies per analysis)`
characters per body. Tools cost less above it.

    python -m bench.token_economy [--case flash-sale] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from cronpilot.harness.exams.catalog import Exam
from tests.support.fake_openai_server import CHARS_PER_TOKEN
from tests.support.use_cases import USE_CASES, run_story

MODES = {"tools": False, "pasted": True}


@dataclass(frozen=True)
class Measure:
    case: str
    mode: str
    analyses: int
    requests: int
    prompt_tokens: int
    completion_tokens: int
    endpoints: float
    body_chars: float
    """The mean size of the stored bodies, in JSON characters."""

    @property
    def prompt_per_analysis(self) -> float:
        return self.prompt_tokens / max(self.analyses, 1)

    @property
    def completion_per_analysis(self) -> float:
        return self.completion_tokens / max(self.analyses, 1)


async def measure(case: Exam, mode: str, folder: Path) -> Measure:
    story = await run_story(
        case, f"sqlite+aiosqlite:///{folder / f'{case.name}-{mode}.db'}", paste_latest=MODES[mode]
    )
    endpoints = await story.store.catalog.list_endpoints(case.name)
    bodies = [
        len(json.dumps(run.body, separators=(",", ":")))
        for endpoint in endpoints
        for run in await story.store.runs.list_runs(endpoint.id, limit=10_000)
        if run.body is not None
    ]
    await story.store.close()
    return Measure(
        case.name,
        mode,
        story.analyses,
        len(story.usage),
        sum(prompt for prompt, _ in story.usage),
        sum(completion for _, completion in story.usage),
        len(endpoints),
        sum(bodies) / max(len(bodies), 1),
    )


def break_even_chars(tools: Measure, pasted: Measure) -> float:
    """The body size at which both modes cost the same prompt tokens per analysis."""
    bodies_per_analysis = pasted.requests * pasted.endpoints / max(pasted.analyses, 1)
    gap = tools.prompt_per_analysis - pasted.prompt_per_analysis
    return max(pasted.body_chars + CHARS_PER_TOKEN * gap / bodies_per_analysis, 0.0)


async def measure_all(cases: list[Exam]) -> list[Measure]:
    with tempfile.TemporaryDirectory(prefix="cronpilot-bench-") as folder:
        return [await measure(case, mode, Path(folder)) for case in cases for mode in MODES]


def _pooled(measures: list[Measure], mode: str) -> Measure:
    chosen = [m for m in measures if m.mode == mode]
    analyses = sum(m.analyses for m in chosen)
    return Measure(
        "all",
        mode,
        analyses,
        sum(m.requests for m in chosen),
        sum(m.prompt_tokens for m in chosen),
        sum(m.completion_tokens for m in chosen),
        # Endpoints and body size weighted by analyses: what an average analysis sees.
        sum(m.endpoints * m.analyses for m in chosen) / max(analyses, 1),
        sum(m.body_chars * m.analyses for m in chosen) / max(analyses, 1),
    )


def report(measures: list[Measure]) -> str:
    lines = [
        f"{'use case':<12} {'mode':<7} {'analyses':>8} {'requests':>8} "
        f"{'prompt/analysis':>16} {'completion/analysis':>20} {'body chars':>10} "
        f"{'break-even':>10}"
    ]
    cases = list(dict.fromkeys(m.case for m in measures))
    rows = [m for case in cases for m in measures if m.case == case]
    rows += [_pooled(measures, mode) for mode in MODES]
    for m in rows:
        pair = {r.mode: r for r in rows if r.case == m.case}
        even = f"{break_even_chars(pair['tools'], pair['pasted']):.0f}" if m.mode == "tools" else ""
        lines.append(
            f"{m.case:<12} {m.mode:<7} {m.analyses:>8} {m.requests:>8} "
            f"{m.prompt_per_analysis:>16.0f} {m.completion_per_analysis:>20.0f} "
            f"{m.body_chars:>10.0f} {even:>10}"
        )
    lines.append(
        "break-even: the body size (JSON characters, each of the job's endpoints) above which "
        "the tools cost fewer prompt tokens than pasting"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=[case.name for case in USE_CASES], action="append")
    parser.add_argument("--json", action="store_true", help="one object per measure")
    arguments = parser.parse_args(argv)
    cases = [case for case in USE_CASES if not arguments.case or case.name in arguments.case]
    measures = asyncio.run(measure_all(cases))
    if arguments.json:
        print(json.dumps([asdict(m) for m in measures], indent=2))
    else:
        print(report(measures))


if __name__ == "__main__":
    main()
