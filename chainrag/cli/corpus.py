"""``chainrag index``: the indexes of a dataset, or one corpus index built in a stream."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from chainrag.cli.common import (
    EmbedderOption,
    LLMOption,
    Progress,
    RerankerOption,
    SetOption,
    changed_recipe,
    fail,
    recipe_argument,
    renamed,
    reports_errors,
    with_encoders,
)

if TYPE_CHECKING:
    from chainrag.recipes.recipe import Recipe

CORPUS_HELP = (
    "A corpus: musique_train_corpus, hotpotqa_train_corpus, 2wiki_hipporag_corpus (chainrag "
    "datasets lists them), dev:NAME (a dev set's paragraphs), or a file (JSON array or JSON "
    "Lines of {title, text}); repeat to index several as one (with --out-dir)."
)
OUT_HELP = "Build one corpus index in a stream into this folder (resumable; see README)."
ENGINE_HELP = "local, or ray (split, NER and embeddings as Ray Data batches; RAY_ADDRESS joins)."
STAGE_UNITS = {"split": "passage", "embed": "sentence"}
RESUME = "finished batches are kept: run the same command to resume"


RecipeArgument = Annotated[
    Path | None, typer.Argument(metavar="RECIPE", help="The recipe whose index: section to build.")
]
OldRecipe = Annotated[
    Path | None, typer.Option("--recipe", hidden=True, help="Old spelling of the RECIPE argument.")
]
DatasetOption = Annotated[
    str | None,
    typer.Option(
        help="Dataset (a name, or a question file's PATH as chainrag run takes it): one index "
        "per question, or its shared corpus (a HippoRAG train set's, or NAME_corpus.json "
        "beside the file NAME.json)."
    ),
]
CorpusOption = Annotated[list[str] | None, typer.Option(help=CORPUS_HELP)]
LimitOption = Annotated[int | None, typer.Option(min=1, help="Only the first N questions.")]
CacheOption = Annotated[bool, typer.Option(help="Reuse and store indexes in the cache.")]
OutOption = Annotated[Path | None, typer.Option("--out-dir", help=OUT_HELP)]
OldOut = Annotated[
    Path | None, typer.Option("--out", hidden=True, help="Old spelling of --out-dir.")
]
DtypeOption = Annotated[str, typer.Option(help="Embeddings on disk: float32 or float16.")]
PassagesOption = Annotated[int, typer.Option(min=1, help="Passages per split+NER batch.")]
SentencesOption = Annotated[int, typer.Option(min=1, help="Sentences per embedding batch.")]
EngineOption = Annotated[str, typer.Option(help=ENGINE_HELP)]


def index_command(
    recipe_file: RecipeArgument = None,
    dataset: DatasetOption = None,
    corpus: CorpusOption = None,
    limit: LimitOption = None,
    cache: CacheOption = True,
    out_dir: OutOption = None,
    dtype: DtypeOption = "float32",
    batch_passages: PassagesOption = 512,
    batch_sentences: SentencesOption = 4096,
    engine: EngineOption = "local",
    set_: SetOption = None,
    llm: LLMOption = None,
    recipe_option: OldRecipe = None,
    out: OldOut = None,
    embedder: EmbedderOption = None,
    reranker: RerankerOption = None,
) -> None:
    """Build (or load from the cache) the indexes of a dataset or corpus and report on them;
    with --out-dir, build one corpus index in a stream into that folder (resumable)."""
    path = recipe_argument(recipe_file, recipe_option)
    out_dir = renamed("--out", "--out-dir", out, out_dir)
    if (dataset is None) == (not corpus):
        raise fail("give exactly one of --dataset and --corpus", 2, prefix="")
    recipe = changed_recipe(path, with_encoders(set_, embedder, reranker), llm)
    if out_dir is not None:
        build_streamed(recipe, corpus or [], out_dir, dtype, batch_passages, batch_sentences,
                       engine)  # fmt: skip
    elif corpus and len(corpus) > 1:
        raise fail("several --corpus sources need --out-dir (a streamed corpus index)", 2,
                   prefix="")  # fmt: skip
    else:
        index_each(recipe, dataset, corpus[0] if corpus else None, limit, cache)


@reports_errors()
def index_each(
    recipe: Recipe, dataset: str | None, corpus: str | None, limit: int | None, cache: bool
) -> None:
    """Build (or load from the cache) the index of each context of a dataset, or of one
    corpus, with a bar when there are several; print what they hold."""
    from chainrag.context import StageContext
    from chainrag.index.build import IndexCache
    from chainrag.index.corpus.indexing import contexts_of, index_contexts, index_section

    spec = index_section(recipe)
    contexts = contexts_of(dataset, corpus, limit, say=lambda line: typer.echo(line, err=True))
    store = IndexCache() if cache else None
    with Progress("context") as bars:
        shown = bars if len(contexts) > 1 else None
        totals = index_contexts(contexts, spec, StageContext(), store, shown)
    for line in totals.lines():
        typer.echo(line)


@reports_errors(RESUME)
def build_streamed(
    recipe: Recipe, corpus: list[str], out: Path, dtype: str, batch_passages: int,
    batch_sentences: int, engine: str,
) -> None:  # fmt: skip
    """Build or resume the corpus index of ``corpus`` into ``out`` with a bar per encoding
    stage, print what it holds, then prepare the seed retriever's vector index."""
    from chainrag.index.corpus.build import Dtype
    from chainrag.index.corpus.indexing import ENGINES, build_from_recipe, prepare_search

    if dtype not in ("float32", "float16") or engine not in ENGINES:
        raise fail("--dtype is float32 or float16; --engine is local or ray", 2, prefix="")
    with Progress("stage", units=STAGE_UNITS, unit_scale=set(STAGE_UNITS)) as bars:
        built = build_from_recipe(
            recipe, corpus, out, dtype=cast(Dtype, dtype), batch_passages=batch_passages,
            batch_sentences=batch_sentences, engine=engine, progress=bars,
        )  # fmt: skip
    for line in built.lines():
        typer.echo(line)
    ready = prepare_search(recipe, out)
    if ready is not None:
        typer.echo(f"vector index for seed retrieval ({ready.search}) ready in "
                   f"{ready.seconds:.1f} s")  # fmt: skip
