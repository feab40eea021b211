"""Optional parts of components, as Protocols: what code looking inside a recipe may ask of a
component beyond its stage's call, checked with ``isinstance`` instead of ``getattr``.

- :class:`ChecksRecipe`: a component that needs something of the recipe around it says so in
  ``check_recipe``; a recipe runs every such check when it loads (``Recipe`` walks its
  components with :func:`chainrag.core.parts.parts`), so an impossible combination is an error
  that names the component's path before anything runs.
- :class:`Judged`: an expander that asks a sufficiency judge.
- :class:`AnsweringJudge`: a judge that answers while it judges (``llm_answerable``).
- :class:`Filtered`: a method with a knowledge filter (Shi et al.'s).
- :class:`Searched`: a seed retriever with a vector search.
- :class:`Named`: an integrator whose answer a recipe may name.
- :class:`Reading`: an integrator that says what it reads (its answer's notes).
- :class:`Worded`: a rewrite trigger that fires on words.
- :class:`Noted`: a method that says how it answers (:class:`~chainrag.core.notes.MethodNotes`),
  which the run writes into each record.
- :class:`InProcesses`: a spaCy stage that may run in worker processes.
- :class:`FileIdentified`: a component that reads a file (a trained adapter), whose content
  hash the caches of what it computed key on.
- :class:`Stateful`: a method that carries state from one question to the next (seed 004's
  knowledge reservoir), which a run declares, records and rolls back (:class:`RunState`);
  :class:`StateInFile`: one whose state is a file its recipe names, which an experiment may
  move (the recurring-question experiment's reservoir in its folder).

Layer: protocols (the bottom): it names no upper layer, even for type checkers, so a recipe
check takes the recipe as ``Any`` (each component's ``check_recipe`` types it as
:class:`chainrag.recipes.recipe.Recipe`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from chainrag.core.notes import MethodNotes, Reads
    from chainrag.protocols.context import Context
    from chainrag.protocols.index import VectorSearch
    from chainrag.protocols.knowledge import KnowledgeFilter
    from chainrag.protocols.method import Method
    from chainrag.protocols.retrieval import SufficiencyJudge


@runtime_checkable
class ChecksRecipe(Protocol):
    """A component with needs of the recipe around it (an index of sentences, a judge that
    answers): ``check_recipe`` raises ``ValueError`` saying what the recipe must change."""

    def check_recipe(self, recipe: Any) -> None: ...


@runtime_checkable
class Judged(Protocol):
    """An expander that asks a sufficiency judge after each hop."""

    judge: SufficiencyJudge


@runtime_checkable
class AnsweringJudge(Protocol):
    """A sufficiency judge that answers while it judges (its verdict's ``answer``)."""

    answers: ClassVar[bool]


@runtime_checkable
class Filtered(Protocol):
    """A method that passes retrieved knowledge through a filter."""

    knowledge_filter: KnowledgeFilter


@runtime_checkable
class Searched(Protocol):
    """A seed retriever whose dense candidates come from a vector search."""

    search: VectorSearch


@runtime_checkable
class Named(Protocol):
    """An integrator whose answer the recipe may name (None: named after its kind)."""

    name: str | None


@runtime_checkable
class Reading(Protocol):
    """An integrator that says what it reads besides the question (its sub-answers, its
    evidence and the budget and reranker it reads it with)."""

    def reads(self) -> Reads: ...


@runtime_checkable
class Worded(Protocol):
    """A rewrite trigger that fires on words (lower-case)."""

    words: tuple[str, ...]


@runtime_checkable
class Noted(Protocol):
    """A method that says how it answers: its integrators and their answers' names, how it
    decides to rewrite (written into each record, read by the view and the analyses)."""

    def notes(self) -> MethodNotes: ...


@runtime_checkable
class InProcesses(Protocol):
    """A stage that may run in worker processes: started for a large job (``processes``) or
    living as long as a threaded run (``workers``); None: as many as the work warrants."""

    processes: int | None
    workers: int | None


@runtime_checkable
class FileIdentified(Protocol):
    """A component whose output follows a file it reads: ``cache_identity`` is the file's
    content hash, so a file retrained into the same path invalidates what was cached."""

    def cache_identity(self) -> str: ...


@runtime_checkable
class RemoteEncoder(Protocol):
    """A component that sends its texts to a model's endpoint (a remote embedder or reranker):
    checked before a run's first question, as the LLM is, unless the store already holds this
    endpoint's values (a replay needs no key), and priced by ``chainrag run --estimate``."""

    def check_endpoint(self, *, call: bool) -> None:
        """Raise LLMUnavailableError where the model, its key or its endpoint is refused (with
        ``call``, by one smallest request outside any usage)."""
        ...

    def stored_before(self) -> bool:
        """Whether the store holds values computed at this endpoint."""
        ...

    @property
    def model(self) -> str:
        """The model string it sends (``openai/text-embedding-3-small``)."""
        ...

    @property
    def api_base(self) -> str | None:
        """The server it sends to; None: the provider's own endpoint."""
        ...

    def identity(self) -> str:
        """The endpoint identity its values are stored under."""
        ...

    def stages(self) -> tuple[str, ...]:
        """The stages its work is counted under in a record's ``encoder_usage`` (``embed
        passages``, ``embed queries``; ``rerank``)."""
        ...


@runtime_checkable
class RunState(Protocol):
    """State a method carries across a run's questions. The run records :meth:`marker` after
    each question and rolls the state back to the last recorded marker when it resumes (and
    to the one before a question that failed), so that a question is answered over the state
    the questions before it left, whatever stopped the run."""

    @property
    def name(self) -> str: ...

    def marker(self) -> int: ...

    def rollback(self, marker: int) -> None: ...


@runtime_checkable
class Stateful(Protocol):
    """A method with cross-question state: ``run_state`` gives it (None: none this time)."""

    def run_state(self, ctx: Context) -> RunState | None: ...


@runtime_checkable
class StateInFile(Stateful, Protocol):
    """A stateful method whose state is a file its recipe names: ``state_in`` is the same
    method with its state in the file at ``path`` (None: with no state, a method that
    remembers nothing)."""

    def state_in(self, path: str | None) -> Method: ...
