"""``chainrag index``: the indexes of a dataset, or one corpus index built in a stream."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, cast

import typer

from chainrag.cli.common import Progress, fail, reports_errors

CORPUS_HELP = (
    "A corpus: musique_train, hotpotqa_train, 2wiki, dev:NAME (a dev set's paragraphs), or a "
    "file (JSON array or JSON Lines of {title, text}); repeat to index several as one (with --out)."
)
OUT_HELP = "Build one corpus index in a stream into this folder (resumable; see README)."
ENGINE_HELP = "local, or ray (split, NER and embeddings as Ray Data batches; RAY_ADDRESS joins)."
STAGE_UNITS = {"split": "passage", "embed": "sentence"}
RESUME = "finished batches are kept: run the same command to resume"


RecipeOption = Annotated[Path, typer.Option(help="Recipe whose index: section to build.")]
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
OutOption = Annotated[Path | None, typer.Option(help=OUT_HELP)]
DtypeOption = Annotated[str, typer.Option(help="Embeddings on disk: float32 or float16.")]
PassagesOption = Annotated[int, typer.Option(min=1, help="Passages per split+NER batch.")]
SentencesOption = Annotated[int, typer.Option(min=1, help="Sentences per embedding batch.")]
EngineOption = Annotated[str, typer.Option(help=ENGINE_HELP)]


def index_command(
    recipe: RecipeOption,
    dataset: DatasetOption = None,
    corpus: CorpusOption = None,
    limit: LimitOption = None,
    cache: CacheOption = True,
    out: OutOption = None,
    dtype: DtypeOption = "float32",
    batch_passages: PassagesOption = 512,
    batch_sentences: SentencesOption = 4096,
    engine: EngineOption = "local",
) -> None:
    """Build (or load from the cache) the indexes of a dataset or corpus and report on them;
    with --out, build one corpus index in a stream into that folder (resumable)."""
    if (dataset is None) == (not corpus):
        raise fail("give exactly one of --dataset and --corpus", 2, prefix="")
    if out is not None:
        build_streamed(recipe, corpus or [], out, dtype, batch_passages, batch_sentences, engine)
    elif corpus and len(corpus) > 1:
        raise fail("several --corpus sources need --out (a streamed corpus index)", 2, prefix="")
    else:
        index_each(recipe, dataset, corpus[0] if corpus else None, limit, cache)


@reports_errors()
def index_each(
    recipe: Path, dataset: str | None, corpus: str | None, limit: int | None, cache: bool
) -> None:
    """Build (or load from the cache) the index of each context of a dataset, or of one
    corpus, with a bar when there are several; print what they hold."""
    from chainrag.core.context import Context
    from chainrag.index.build import IndexCache
    from chainrag.index.corpus.indexing import contexts_of, index_contexts, index_section

    spec = index_section(recipe)
    contexts = contexts_of(dataset, corpus, limit, say=lambda line: typer.echo(line, err=True))
    store = IndexCache() if cache else None
    with Progress("context") as bars:
        shown = bars if len(contexts) > 1 else None
        totals = index_contexts(contexts, spec, Context(), store, shown)
    for line in totals.lines():
        typer.echo(line)


@reports_errors(RESUME)
def build_streamed(
    recipe: Path, corpus: list[str], out: Path, dtype: str, batch_passages: int,
    batch_sentences: int, engine: str,
) -> None:  # fmt: skip
    """Build or resume the corpus index of ``corpus`` into ``out`` with a bar per encoding
    stage, print what it holds, then prepare the seed retriever's vector index."""
    from chainrag.index.corpus.build import Dtype
    from chainrag.index.corpus.indexing import ENGINES, build_from_recipe, prepare_search

    if dtype not in ("float32", "float16") or engine not in ENGINES:
        raise fail("--dtype is float32 or float16; --engine is local or ray", 2, prefix="")
    with Progress("unit", units=STAGE_UNITS, unit_scale=True) as bars:
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
