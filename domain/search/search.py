"""Hybrid search: endpoints found by intent (seed 003, "Hybrid Search Integration").

Three legs score every endpoint of the index against a query, each in [0, 1]:
- **semantic**: the cosine of the query's embedding with the endpoint's (clipped at 0), divided
  by the best one and raised to `SHARPEN`, so that the legs share a scale;
- **lexical**: BM25 (bm25s) over the endpoint's words, divided by the best score; a query word
  the index lacks (`certs`, `abnormal`) counts as the index's words closest to it in meaning
  (`certificate`, `anomaly`), each weighed by its similarity, when the words' vectors are given;
- **graph**: how the tool graph relates the endpoint to the query: to the context endpoints
  (direct edges and Adamic-Adar) or, without any, to the endpoints the text legs liked best
  (a neighbour of a good match is worth a look: "graph intelligence bubbles related tools into
  candidates"), to the best match of its Louvain community, and its PageRank (hubs boosted).

The text legs are blended first (semantic and lexical, `TEXT_WEIGHTS`), then with the graph by
an alpha that follows the graph's density around each endpoint (seed 003's local alpha): an
endpoint without links is ranked by its text alone (alpha 1, the cold start); a densely linked
one lets the graph count for up to half (alpha 0.5). The result's alpha is the one the mean
density gives. Every hit carries its parts and its alpha, so a ranking can be explained.

Pure: the index is built from the endpoints' texts, their vectors and the edges; embedding the
query and the words (`vocabulary`, `unknown_words`) is the caller's (an `Embedder`). networkx
and bm25s are imported where used (CLI start-up).
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from cronpilot.domain.errors import InvalidQuery
from cronpilot.domain.graph.graph import Edge, EdgeType, pagerank
from cronpilot.domain.graph.provides import MEANING_THRESHOLD
from cronpilot.domain.runs.excerpt import excerpt

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from cronpilot.domain.model import Endpoint

MAX_QUERY_CHARS = 500
"""A query is a question or an intent, not a document: past this it is refused."""
DEFAULT_LIMIT = 10
MAX_LIMIT = 100
TEXT_WEIGHTS = (0.7, 0.3)
"""Semantic and lexical shares of the text score when both legs are there (`bench.search`)."""
SHARPEN = 4
"""The power the semantic scores (divided by the best) are raised to (`bench.search`)."""
GRAPH_PARTS = (0.2, 0.6, 0.2)
"""Shares of the graph score: relatedness, community, PageRank."""
MIN_ALPHA = 0.5
"""The text's least share, in a dense graph (seed 003: "dense cluster: alpha about 0.5")."""
DENSE_DEGREE = 4.0
"""Mean edges per endpoint (between endpoints) from which the graph counts as dense."""
CANDIDATES = 60
"""Endpoints (best text first) whose graph score is computed: the rest keep their text score."""
LOUVAIN_SEED = 7
"""Louvain is randomised: a fixed seed gives the same communities for the same graph."""
RELATED_THRESHOLD = MEANING_THRESHOLD
"""The least cosine between a query word the index lacks and an index word it then stands for:
the threshold `graph suggest` matches field names by meaning with (not tuned on the labelled
set). With the bundled model `cert`/`certificate` 0.54, `membership`/`subscription` 0.44,
`abnormal`/`anomaly` 0.33 pass; `depot`/`warehouse` -0.01, `spike`/`anomaly` 0.04 do not."""
MATCH_FLOOR = 0.3
"""The least cosine between a query and an endpoint for the query to match anything when none of
its words (nor the words closest to them in meaning) is indexed: every leg is scaled to its best
endpoint, so without a floor a query of nonsense names one at 0.99. With the bundled model the
example questions reach 0.33 and more; `zzzz qqqq` 0.23, `weather in paris` 0.10."""
RELATED_WORDS = 5
"""The most index words one query word stands for: a bound on the work, not a weight (3 to 10
ranked the labelled and held-out sets alike; the threshold does the choosing)."""
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "get",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "show",
        "that",
        "the",
        "their",
        "them",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "endpoint",
        "endpoints",
        "tell",
        "tells",
        "give",
        "gives",
        "find",
    ]
)
"""Words too common in questions to tell endpoints apart ("which endpoint tells me …")."""


class Leg(StrEnum):
    SEMANTIC = "semantic"
    LEXICAL = "lexical"
    GRAPH = "graph"


ALL_LEGS = frozenset(Leg)


def checked_query(text: str) -> str:
    """The query stripped, or `InvalidQuery`: empty, over `MAX_QUERY_CHARS`, or with letters
    outside the Latin script (the bundled model and the index read English)."""
    query = " ".join(text.split())
    if not query:
        raise InvalidQuery("the query is empty; say what the endpoint should do or tell")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidQuery(f"the query has {len(query)} characters; at most {MAX_QUERY_CHARS}")
    foreign = sorted({_script(c) for c in query if c.isalpha()} - {"LATIN"})
    if foreign:
        raise InvalidQuery(
            f"{excerpt(repr(query))} is written in {', '.join(foreign).lower()} script; "
            "endpoints are indexed in English: ask in the Latin script"
        )
    return query


def _script(char: str) -> str:
    return unicodedata.name(char, "UNKNOWN").split(" ", 1)[0]


def words(text: str) -> list[str]:
    """Lower-case words of `text`, identifiers split (`fraud_rate`, `fraudRate` → fraud rate),
    stop words dropped, plurals and -ing/-ed folded (a crude stemmer: enough for names)."""
    spaced = _CAMEL.sub(" ", text).replace("_", " ").lower()
    return [_stem(word) for word in _WORD.findall(spaced) if word not in STOPWORDS]


def _stem(word: str) -> str:
    """Plurals folded to the singular (`entries` entry, `boxes` box, `spikes` spike)."""
    if len(word) <= 3 or word.endswith("ss"):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


def humane(identifier: str) -> str:
    """`fraud_rate` → `fraud rate`, `orderId` → `order id`: identifiers read as words."""
    return " ".join(_CAMEL.sub(" ", identifier).replace("_", " ").replace("-", " ").split()).lower()


@dataclass(frozen=True, slots=True)
class EndpointText:
    """What is indexed of one endpoint."""

    ref: str
    job: str
    text: str

    @property
    def digest(self) -> str:
        """Changes when the text does: a stored vector with another digest is stale."""
        return hashlib.sha256(self.text.encode()).hexdigest()[:32]


def endpoint_text(
    *,
    job: str,
    job_description: str,
    name: str,
    description: str,
    url_path: str,
    outputs: Iterable[str],
    inputs: Iterable[str],
) -> EndpointText:
    """The indexed text: names and descriptions, the URL's path, learnt output fields and
    request inputs, identifiers written as words."""
    parts = [
        f"{humane(name)}: {description}".strip(),
        f"job {humane(job)}: {job_description}".strip(),
        f"path {' '.join(humane(p) for p in url_path.split('/') if p and '{' not in p)}",
    ]
    outs = sorted({humane(f) for f in outputs})
    ins = sorted({humane(f) for f in inputs})
    if outs:
        parts.append("returns " + ", ".join(outs))
    if ins:
        parts.append("takes " + ", ".join(ins))
    return EndpointText(f"{job}/{name}", job, ". ".join(p.rstrip(". ") for p in parts))


def indexed_text(
    endpoint: Endpoint, job_description: str = "", outputs: Iterable[str] = ()
) -> EndpointText:
    """`endpoint_text` of a stored endpoint: its spec's names, description, URL path and
    request inputs, with its job's description and learnt output fields when known."""
    from urllib.parse import urlsplit

    from cronpilot.domain.runs.templates import input_fields

    spec = endpoint.spec
    return endpoint_text(
        job=endpoint.job_name,
        job_description=job_description,
        name=spec.name,
        description=spec.description,
        url_path=urlsplit(spec.url).path,
        outputs=outputs,
        inputs=[i.name for i in input_fields(spec)],
    )


def sibling_texts(job: Sequence[Endpoint]) -> list[EndpointText]:
    """The texts of a job's endpoints as a planner knows them (no schemas read)."""
    return [indexed_text(endpoint) for endpoint in job]


@dataclass(frozen=True, slots=True)
class Weights:
    """How the legs were blended: score = alpha x text + (1 - alpha) x graph, text = semantic
    x `semantic` + lexical x `lexical` (the two sum to 1)."""

    alpha: float
    semantic: float
    lexical: float
    density: float
    """Mean edges per endpoint between endpoints, what alpha follows."""


@dataclass(frozen=True, slots=True)
class Hit:
    ref: str
    score: float
    semantic: float
    lexical: float
    graph: float
    alpha: float = 1.0
    """This endpoint's text share: score = alpha x text + (1 - alpha) x graph."""
    community: int | None = None


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: list[Hit]
    weights: Weights
    legs: frozenset[Leg]
    notes: list[str] = field(default_factory=list)
    """What the caller should be told: a leg missing and why."""
    related: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    """The query's words the index lacks, each with the index words the lexical leg matched
    for it and their similarity (`cert`: `certificate` 0.544): part of the lexical score."""


def density(edges: Iterable[Edge], refs: Iterable[str]) -> float:
    """Mean number of distinct endpoint-to-endpoint links per endpoint of `refs`."""
    known = set(refs)
    if not known:
        return 0.0
    pairs = {
        frozenset((e.from_node, e.to_node))
        for e in edges
        if e.from_node in known and e.to_node in known and e.from_node != e.to_node
    }
    return 2 * len(pairs) / len(known)


def adaptive_alpha(graph_density: float) -> float:
    """1 without links (text only), falling to `MIN_ALPHA` at `DENSE_DEGREE` links each."""
    return 1 - (1 - MIN_ALPHA) * min(1.0, graph_density / DENSE_DEGREE)


def communities(edges: Iterable[Edge], nodes: Iterable[str] = ()) -> list[list[str]]:
    """Louvain communities of the undirected weighted graph (job nodes and `contains` edges
    left out: they would make every job one community), largest first, each sorted; nodes
    without a link are communities of one. Seeded: the same graph gives the same groups."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(n for n in nodes if "/" in n)
    for edge in edges:
        if edge.type is EdgeType.CONTAINS or edge.from_node == edge.to_node:
            continue
        weight = graph.get_edge_data(edge.from_node, edge.to_node, {}).get("weight", 0.0)
        graph.add_edge(edge.from_node, edge.to_node, weight=weight + edge.weight)
    if graph.number_of_nodes() == 0:
        return []
    found = nx.community.louvain_communities(graph, weight="weight", seed=LOUVAIN_SEED)
    groups = [sorted(str(n) for n in group) for group in found]
    return sorted(groups, key=lambda g: (-len(g), g[0]))


def community_of(groups: Sequence[Sequence[str]]) -> dict[str, int]:
    """Each node's community number (1 = the largest)."""
    return {node: number for number, group in enumerate(groups, 1) for node in group}


class SearchIndex:
    """The endpoints of a catalog ready to be searched: BM25 over their words, their vectors
    as one normalised matrix, and the graph's figures (PageRank, communities, neighbours)."""

    def __init__(
        self,
        texts: Sequence[EndpointText],
        edges: Sequence[Edge],
        vectors: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        import numpy as np

        self.texts = list(texts)
        self.refs = [t.ref for t in self.texts]
        self.position = {ref: i for i, ref in enumerate(self.refs)}
        self._lexical = _Bm25([words(t.text) for t in self.texts])
        self.vocabulary = self._lexical.vocabulary
        """The words indexed (as `words` gives them): those `use_word_vectors` wants."""
        self._related_words: list[str] = []
        self._related_matrix: npt.NDArray[np.float32] | None = None
        self._matrix: npt.NDArray[np.float32] | None = None
        if vectors is not None and self.texts and all(r in vectors for r in self.refs):
            matrix = np.asarray([vectors[r] for r in self.refs], dtype=np.float32)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            self._matrix = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
        inside = [e for e in edges if e.from_node in self.position and e.to_node in self.position]
        self.density = density(inside, self.refs)
        ranks = pagerank(inside)
        top = max(ranks.values(), default=0.0)
        self._rank = np.asarray(
            [ranks.get(r, 0.0) / top if top else 0.0 for r in self.refs], dtype=np.float32
        )
        self.communities = communities(inside, self.refs)
        self.community = community_of(self.communities)
        self._neighbours: dict[int, dict[int, float]] = {}
        for e in inside:
            if e.from_node == e.to_node:
                continue
            a, b = self.position[e.from_node], self.position[e.to_node]
            for one, other in ((a, b), (b, a)):
                links = self._neighbours.setdefault(one, {})
                links[other] = max(links.get(other, 0.0), e.weight)

    def use_word_vectors(self, vectors: Mapping[str, Sequence[float]]) -> None:
        """The embeddings of the `vocabulary`'s words (by the model that embeds the query's):
        a query word the index lacks then matches the index words closest in meaning."""
        import numpy as np

        known = [w for w in self.vocabulary if w in vectors]
        if not known:
            return
        matrix = np.asarray([vectors[w] for w in known], dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self._related_words = known
        self._related_matrix = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)

    @property
    def relates_words(self) -> bool:
        """Whether the index has its words' vectors (`use_word_vectors`)."""
        return self._related_matrix is not None

    def unknown_words(self, query: str) -> list[str]:
        """The query's words the index lacks, once each: those whose vectors `search` reads
        (`word_vectors`) to match them by meaning."""
        return list(dict.fromkeys(w for w in words(query) if w not in self._lexical.known))

    def related(
        self, word_vectors: Mapping[str, Sequence[float]]
    ) -> dict[str, list[tuple[str, float]]]:
        """For each word of `word_vectors` (query words the index lacks), the index words at
        least `RELATED_THRESHOLD` similar, most similar first, at most `RELATED_WORDS`."""
        import numpy as np

        if self._related_matrix is None:
            return {}
        found = {}
        for word, vector in word_vectors.items():
            query = np.asarray(vector, dtype=np.float32)
            norm = float(np.linalg.norm(query))
            if norm == 0 or word in self._lexical.known:
                continue
            similar = self._related_matrix @ (query / norm)
            best = [int(i) for i in np.argsort(-similar)[:RELATED_WORDS]]
            near = [
                (self._related_words[i], round(float(similar[i]), 3))
                for i in best
                if similar[i] >= RELATED_THRESHOLD
            ]
            if near:
                found[word] = near
        return found

    def search(
        self,
        query: str,
        query_vector: Sequence[float] | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        job: str | None = None,
        context: Sequence[str] = (),
        legs: frozenset[Leg] = ALL_LEGS,
        word_vectors: Mapping[str, Sequence[float]] | None = None,
    ) -> SearchResult:
        """The best `limit` endpoints (of `job` when given) for `query` (already checked),
        blended from `legs` (a benchmark compares them one by one); `query_vector` the query's
        embedding, None when no model could embed it (the semantic leg is then left out);
        `word_vectors` the embeddings of its `unknown_words`, matched by meaning by the
        lexical leg (without them, it matches the words the index has)."""
        import numpy as np

        notes = []
        use = set(legs)
        if Leg.SEMANTIC in use and (query_vector is None or self._matrix is None):
            use.discard(Leg.SEMANTIC)
            notes.append("no embedding model reachable: ranked by lexical and graph scores only")
        count = len(self.refs)
        semantic = np.zeros(count, dtype=np.float32)
        if Leg.SEMANTIC in use and self._matrix is not None and query_vector is not None:
            vector = np.asarray(query_vector, dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                semantic = np.clip(self._matrix @ (vector / norm), 0, None)
        related = self.related(word_vectors or {}) if Leg.LEXICAL in use else {}
        lexical = (
            self._lexical.scores(words(query), related) if Leg.LEXICAL in use else semantic * 0
        )
        matched = float(lexical.max(initial=0)) > 0 or float(semantic.max(initial=0)) >= MATCH_FLOOR
        # Cosines of one query bunch up (the best few within 0.05 of each other): raised to a
        # power they keep their order but part as far as BM25's scores do.
        semantic, lexical = _scaled(semantic) ** SHARPEN, _scaled(lexical)
        if Leg.SEMANTIC in use and Leg.LEXICAL in use:
            w_sem, w_lex = TEXT_WEIGHTS
        elif Leg.SEMANTIC in use:
            w_sem, w_lex = 1.0, 0.0
        else:
            w_sem, w_lex = 0.0, 1.0
        text = w_sem * semantic + w_lex * lexical
        allowed = np.ones(count, dtype=bool)
        if job is not None:
            allowed = np.asarray([t.job == job for t in self.texts], dtype=bool)
        text = np.where(allowed, text, -1.0)
        graphed = Leg.GRAPH in use and bool(self._neighbours)
        alpha = adaptive_alpha(self.density) if graphed else 1.0
        weights = Weights(round(alpha, 3), w_sem, w_lex, round(self.density, 3))
        graph = np.zeros(count, dtype=np.float32)
        order = _best(text, max(CANDIDATES, limit), allowed)
        if graphed:
            # Candidate expansion (seed 003, ADR-023): the neighbours of the best text matches
            # may be what is meant, though their own words say less.
            expanded = dict.fromkeys(order)
            for i in order[:limit]:
                expanded.update(dict.fromkeys(j for j in self._neighbours.get(i, {}) if allowed[j]))
            order = list(expanded)
            for i, value in self._graph_scores(order, text, context).items():
                graph[i] = value
        # Local alpha (seed 003, ADR-048): the graph speaks for an endpoint as far as it is
        # linked; an isolated one is ranked by its text alone, not marked down for no links.
        local = {i: self.alpha_of(i) if graphed else 1.0 for i in order}
        final = {
            i: local[i] * max(float(text[i]), 0.0) + (1 - local[i]) * float(graph[i]) for i in order
        }
        best = sorted(final, key=lambda i: (-final[i], self.refs[i]))[:limit]
        hits = [
            Hit(
                self.refs[i],
                round(final[i], 4),
                round(float(semantic[i]), 4),
                round(float(lexical[i]), 4),
                round(float(graph[i]), 4),
                round(local[i], 3),
                self.community.get(self.refs[i]),
            )
            for i in best
            if matched and final[i] > 0
        ]
        return SearchResult(hits, weights, frozenset(use), notes, related)

    def alpha_of(self, i: int) -> float:
        """The text's share in endpoint `i`'s score: `adaptive_alpha` of its own links."""
        return adaptive_alpha(len(self._neighbours.get(i, {})))

    def _graph_scores(
        self, order: Sequence[int], text: npt.NDArray[Any], context: Sequence[str]
    ) -> dict[int, float]:
        import networkx as nx

        known = [self.position[c] for c in context if c in self.position]
        shared: dict[int, float] = {}
        if known:
            # Adamic-Adar with the context endpoints, over the candidates' neighbourhoods.
            graph = nx.Graph()
            graph.add_nodes_from([*order, *known])
            for i in {*order, *known}:
                graph.add_edges_from((i, j) for j in self._neighbours.get(i, {}))
            pairs = [(i, c) for i in order for c in known if i != c]
            for i, _, value in nx.adamic_adar_index(graph, pairs):
                shared[i] = shared.get(i, 0.0) + float(value)
        top_shared = max(shared.values(), default=0.0)
        best_in: dict[int, float] = {}
        for i in order:
            group = self.community.get(self.refs[i])
            if group is not None:
                best_in[group] = max(best_in.get(group, 0.0), float(text[i]))
        related_part, community_part, rank_part = GRAPH_PARTS
        scores = {}
        for i in order:
            links = self._neighbours.get(i, {})
            if known:
                direct = max((links.get(c, 0.0) for c in known), default=0.0)
                near = shared.get(i, 0.0) / top_shared if top_shared else 0.0
                related = max(direct, near)
            else:
                related = max((w * max(float(text[j]), 0.0) for j, w in links.items()), default=0)
            group = self.community.get(self.refs[i])
            same = self.communities[group - 1] if group is not None else []
            community = best_in.get(group, 0.0) if group is not None and len(same) > 1 else 0.0
            scores[i] = (
                related_part * related
                + community_part * community
                + rank_part * float(self._rank[i])
            )
        return scores


def _best(values: npt.NDArray[Any], count: int, allowed: npt.NDArray[Any]) -> list[int]:
    """Positions of the `count` highest `values` among the allowed, best first (ties by
    position): a partition then a sort of those only, not of the whole index."""
    import numpy as np

    if count < values.size:
        top = np.argpartition(-values, count - 1)[:count]
    else:
        top = np.arange(values.size)
    ordered = sorted((int(i) for i in top), key=lambda i: (-float(values[i]), i))
    return [i for i in ordered if allowed[i]]


def _scaled(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    top = float(values.max()) if values.size else 0.0
    return values / top if top > 0 else values


class _Bm25:
    """BM25 (bm25s) over pre-split words: every document's score for a query's words."""

    def __init__(self, documents: Sequence[list[str]]) -> None:
        import bm25s

        # bm25s sets its own logger to DEBUG on import: its index-building chatter is not ours.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self._size = len(documents)
        self._model: Any = None
        self.known: frozenset[str] = frozenset()
        if any(documents):
            model = bm25s.BM25()
            model.index(documents, show_progress=False)
            self._model = model
            self.known = frozenset(w for w in model.vocab_dict if w)
        self.vocabulary = sorted(self.known)

    def scores(
        self, query: Sequence[str], related: Mapping[str, Sequence[tuple[str, float]]]
    ) -> npt.NDArray[Any]:
        """BM25 of the query's words the index has, plus, for each it lacks, the BM25 of the
        index words `related` to it, each times its similarity (below 1: a word of the same
        meaning is weaker evidence than the word itself)."""
        import numpy as np

        total = np.zeros(self._size, dtype=np.float32)
        if self._model is None or not query:
            return total
        known = [w for w in query if w in self.known]
        if known:
            total += np.asarray(self._model.get_scores(known), dtype=np.float32)
        for word, similarity in _related_weights(query, known, related).items():
            total += similarity * np.asarray(self._model.get_scores([word]), dtype=np.float32)
        return total


def _related_weights(
    query: Sequence[str], known: Sequence[str], related: Mapping[str, Sequence[tuple[str, float]]]
) -> dict[str, float]:
    """Each index word standing for the query's unknown words, its similarities summed; a word
    the query has itself is counted as itself only."""
    weights: dict[str, float] = {}
    for word in query:
        for other, similarity in related.get(word, ()):
            if other not in known:
                weights[other] = weights.get(other, 0.0) + similarity
    return weights


def estimated_tokens(text: str) -> int:
    """Tokens a model reads for `text`, as the planner's benchmarks count them (4 per
    character)."""
    return math.ceil(len(text) / 4)
