"""spaCy in worker processes (``processes``, chainrag/components/index/spacy_nlp.py): the same
sentences and the same mentions as one process, on the shared 2Wiki corpus; ``null`` chooses by
the job's size; the field changes no digest; Ray's actors keep spaCy in their own process."""

from __future__ import annotations

import attrs
import pytest

from chainrag.components.index import spacy_nlp
from chainrag.components.index.spacy_nlp import SpacyNER, SpacySentences, worker_count
from chainrag.context import StageContext
from chainrag.core.errors import RecipeError
from chainrag.data.datasets import load_corpus
from chainrag.index.corpus.build import index_digest
from chainrag.index.corpus.ray_engine import in_one_process
from chainrag.recipes.overrides import load_changed, parse_all
from chainrag.recipes.recipe import load_recipe

from .conftest import ROOT

GRAPH = ROOT / "recipes" / "index" / "sentence_graph.yaml"


@pytest.mark.slow
def test_worker_processes_give_the_same_sentences_and_mentions_on_the_shared_corpus() -> None:
    """The first 600 passages of HippoRAG's 2Wiki corpus (1,993 sentences: enough for
    several batches in each process; the whole corpus is checked by
    ``bench/index_build.py --check-processes``)."""
    passages = load_corpus("2wiki_hipporag_corpus")[:600]
    one, two = StageContext(), StageContext()
    sentences = SpacySentences(processes=1)(passages, one)
    assert SpacySentences(processes=2)(passages, two) == sentences
    texts = [s.text for s in sentences]
    assert len(texts) > 1900
    mentions = SpacyNER(processes=1)(texts, one)
    assert SpacyNER(processes=2)(texts, two) == mentions
    assert sum(map(len, mentions)) > 1000


def test_unset_processes_use_the_cores_only_for_a_large_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(spacy_nlp, "cores", lambda: 4)
    assert worker_count(None, 200) == 1  # a question's own passages
    assert worker_count(None, 512) == 1  # a corpus batch of passages to split
    assert worker_count(None, 999) == 1
    assert worker_count(None, 1000) == 2
    assert worker_count(None, 1800) == 3  # a corpus batch of sentences for NER
    assert worker_count(None, 100_000) == 4
    assert worker_count(3, 10) == 3  # set: as set


def test_processes_is_a_placement_field_checked_when_the_recipe_loads() -> None:
    spec = load_recipe(GRAPH).index
    assert spec is not None
    assert isinstance(spec.ner, SpacyNER)
    assert isinstance(spec.splitter, SpacySentences)
    changed = load_changed(GRAPH, parse_all(["index.ner.processes=2"])).index
    assert changed is not None
    assert isinstance(changed.ner, SpacyNER)
    assert changed.ner.processes == 2
    assert index_digest(changed) == index_digest(spec)
    with pytest.raises(RecipeError, match=r"'processes' must be >= 1: 0 @ .*index\.ner"):
        load_changed(GRAPH, parse_all(["index.ner.processes=0"]))


def test_ray_actors_keep_spacy_in_their_own_process() -> None:
    spec = load_recipe(GRAPH).index
    assert spec is not None
    spec = attrs.evolve(spec, ner=SpacyNER(processes=4))
    single = in_one_process(spec)
    assert isinstance(single.ner, SpacyNER)
    assert isinstance(single.splitter, SpacySentences)
    assert (single.ner.processes, single.splitter.processes) == (1, 1)
    assert attrs.evolve(single, ner=spec.ner, splitter=spec.splitter) == spec
