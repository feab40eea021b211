"""What a run's records say of its method (:class:`~chainrag.core.notes.MethodNotes`), from its
recipe: the method's own notes (a :class:`~chainrag.protocols.parts.Noted` method: its answers'
names and integrators, its rewriting) and the kind of the expander that walked.

The runner adds them to every prediction (:func:`chainrag.run.question.answer_question`); a
record written before they were gets them from the run's stored recipe when it is read
(:meth:`chainrag.run.folder.RunDir.records`). Either way one function makes them, from the
typed recipe, so that no reader restates a method's defaults.

Layer: the record side of run: never the LLM layer nor the methods (the method is asked
through its Protocol).
"""

from __future__ import annotations

import attrs

from chainrag.core.notes import MethodNotes
from chainrag.protocols.parts import Noted
from chainrag.recipes.recipe import Recipe
from chainrag.recipes.registry import kind_of


def notes_of(recipe: Recipe) -> MethodNotes | None:
    """What ``recipe``'s records say of its method; None for a method that says nothing."""
    if not isinstance(recipe.method, Noted):
        return None
    expander = recipe.retrieval.expander if recipe.retrieval is not None else None
    kind = kind_of(expander) if expander is not None else None
    return attrs.evolve(recipe.method.notes(), expander=kind)
