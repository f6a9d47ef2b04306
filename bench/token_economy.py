"""Token economy, measured: the five use cases run twice against the scripted OpenAI-compatible
server — once with the query tools (the model fetches fields on demand), once with the latest
responses of the endpoint and its siblings pasted into the prompt — and the prompt and
completion tokens per analysis are printed from the server's usage accounting.

    python -m bench.token_economy [--case flash-sale] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.support.use_cases import USE_CASES, UseCase, run_story

MODES = {"tools": False, "pasted": True}


@dataclass(frozen=True)
class Measure:
    case: str
    mode: str
    analyses: int
    requests: int
    prompt_tokens: int
    completion_tokens: int

    @property
    def prompt_per_analysis(self) -> float:
        return self.prompt_tokens / max(self.analyses, 1)

    @property
    def completion_per_analysis(self) -> float:
        return self.completion_tokens / max(self.analyses, 1)


async def measure(case: UseCase, mode: str, folder: Path) -> Measure:
    story = await run_story(
        case, f"sqlite+aiosqlite:///{folder / f'{case.name}-{mode}.db'}", paste_latest=MODES[mode]
    )
    await story.store.close()
    return Measure(
        case.name,
        mode,
        story.analyses,
        len(story.usage),
        sum(prompt for prompt, _ in story.usage),
        sum(completion for _, completion in story.usage),
    )


async def measure_all(cases: list[UseCase]) -> list[Measure]:
    with tempfile.TemporaryDirectory(prefix="cronpilot-bench-") as folder:
        return [await measure(case, mode, Path(folder)) for case in cases for mode in MODES]


def report(measures: list[Measure]) -> str:
    lines = [
        f"{'use case':<12} {'mode':<7} {'analyses':>8} {'requests':>8} "
        f"{'prompt/analysis':>16} {'completion/analysis':>20}"
    ]
    for m in measures:
        lines.append(
            f"{m.case:<12} {m.mode:<7} {m.analyses:>8} {m.requests:>8} "
            f"{m.prompt_per_analysis:>16.0f} {m.completion_per_analysis:>20.0f}"
        )
    for mode in MODES:
        chosen = [m for m in measures if m.mode == mode]
        analyses = sum(m.analyses for m in chosen)
        prompt = sum(m.prompt_tokens for m in chosen) / max(analyses, 1)
        completion = sum(m.completion_tokens for m in chosen) / max(analyses, 1)
        lines.append(
            f"{'all':<12} {mode:<7} {analyses:>8} {sum(m.requests for m in chosen):>8} "
            f"{prompt:>16.0f} {completion:>20.0f}"
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
