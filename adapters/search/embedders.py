"""Embedders (decision 0033): wordllama's model, shipped inside its wheel and loaded with
downloads disabled, and any OpenAI-compatible `/embeddings` endpoint.

wordllama 0.4 looks for its bundled tokenizer under `tokenizer/` but ships it under
`tokenizers/`, and then downloads it. So its files are linked into a folder laid out as its
cache expects (`weights/`, `tokenizers/`) and loaded from there with `disable_download=True`:
no network at run time, and a missing file is an `EmbedderUnavailable`, never a download.
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cronpilot.domain.errors import EmbedderUnavailable
from cronpilot.domain.ports import Embedder

log = logging.getLogger(__name__)

# Search multiplies one query vector by the index (10,000 x 256 floats: half a millisecond on
# one core). OpenBLAS would spread it over every core, and on a busy machine its spinning
# threads made that 6 to 10 times slower (`bench.search`): one thread, unless told otherwise.
# Set before numpy is first imported (this module is imported before any search runs).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_DIM = 256
WORDLLAMA_MODEL = f"wordllama/{WORDLLAMA_CONFIG}-{WORDLLAMA_DIM}"
OPENAI_BATCH = 256
"""Texts per `/embeddings` request."""


def _lay_out(folder: Path, package: Path) -> None:
    """`folder` laid out as wordllama's cache, its files linked to the wheel's own."""
    for sub in ("weights", "tokenizers"):
        (folder / sub).mkdir()
        for source in (package / sub).iterdir():
            if source.suffix in (".safetensors", ".json"):
                (folder / sub / source.name).symlink_to(source)


@functools.cache
def _wordllama() -> Any:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        # wordllama calls `logging.basicConfig(level=INFO)` on import: the process's logging
        # is put back as it was.
        import wordllama
        from wordllama import WordLlama

        root.handlers[:], root.level = handlers, level
        # The weights and the tokenizer are read into memory by `load`: the folder of links
        # is gone once it has returned.
        with tempfile.TemporaryDirectory(prefix="cronpilot-wordllama-") as folder:
            _lay_out(Path(folder), Path(wordllama.__file__).parent)
            return WordLlama.load(
                WORDLLAMA_CONFIG,
                cache_dir=Path(folder),
                dim=WORDLLAMA_DIM,
                disable_download=True,
            )
    except (ImportError, OSError, ValueError) as exc:
        reason = f"wordllama's bundled model could not be loaded ({exc})"
        raise EmbedderUnavailable(reason) from None


class WordLlamaEmbedder(Embedder):
    """Static token embeddings averaged (numpy): about a millisecond per text, no server."""

    @property
    def model(self) -> str:
        return WORDLLAMA_MODEL

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed_now(texts)

    def embed_now(self, texts: Sequence[str]) -> list[list[float]]:
        """The same, without an event loop (the benchmark; the query of a search)."""
        if not texts:
            return []
        vectors = _wordllama().embed(list(texts), norm=True)
        return [[float(x) for x in row] for row in vectors]


class OpenAIEmbedder(Embedder):
    """Any OpenAI-compatible `/embeddings` endpoint, through the official SDK; one attempt
    per call with a short timeout: search falls back to its other legs instead of waiting."""

    def __init__(
        self, base_url: str | None, model: str, api_key: str | None, timeout_seconds: float
    ) -> None:
        self._base_url = base_url
        self._model = model
        self._api_key = api_key
        self._timeout = timeout_seconds

    @property
    def model(self) -> str:
        return f"openai/{self._model}"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import openai

        if not texts:
            return []
        client = openai.AsyncOpenAI(
            base_url=self._base_url,
            api_key=self._api_key or "not-needed",
            timeout=self._timeout,
            max_retries=0,
        )
        vectors: list[list[float]] = []
        try:
            async with client:
                for start in range(0, len(texts), OPENAI_BATCH):
                    batch = list(texts[start : start + OPENAI_BATCH])
                    answer = await client.embeddings.create(model=self._model, input=batch)
                    ordered = sorted(answer.data, key=lambda item: item.index)
                    if len(ordered) != len(batch):
                        raise EmbedderUnavailable(
                            f"the embeddings server answered {len(ordered)} vectors for "
                            f"{len(batch)} texts"
                        )
                    vectors += [list(item.embedding) for item in ordered]
        except openai.OpenAIError as exc:
            # Imported here, as `openai` is: a search without this embedder loads neither.
            from cronpilot.adapters.llm.openai_client import described

            raise EmbedderUnavailable(described(exc, "embeddings")) from None
        except TimeoutError:
            raise EmbedderUnavailable("the embeddings server did not answer in time") from None
        return vectors


class NoEmbedder(Embedder):
    """Search without a semantic leg (`search_embedder = none`)."""

    @property
    def model(self) -> str:
        return "none"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbedderUnavailable("search_embedder is none")
