"""ChainRAG and NaiveRAG with the remote embedder on the stand-in give what they give with the
local ``hashed_bow`` embedder: the same candidates, the same prompts, the same predictions, on
10 MuSiQue questions, with spaCy in this process or in worker processes; and a rerun of the
remote one makes no embedding request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from chainrag.core.context import ModelStore
from chainrag.core.types import Usage
from chainrag.data.datasets import load_dataset
from chainrag.llm import open_llm
from chainrag.recipes.overrides import load_changed, parse_all
from chainrag.run.question import answer_question
from chainrag.standin.replies import standin_reply
from chainrag.standin.server import FakeOpenAI, serve

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ("recipes/chainrag/ansint.yaml", "recipes/baselines/naive.yaml")


def answered(
    recipe_file: str, embedder: str, api_base: str, fake: FakeOpenAI, workers: int = 0
) -> list[Any]:
    """Each question's prediction with the prompts the stand-in was sent for it (spaCy in
    ``workers`` worker processes, as a threaded run places them, or in this one)."""
    llm = json.dumps({"kind": "litellm", "model": "openai/standin", "api_base": api_base})
    recipe = load_changed(ROOT / recipe_file, parse_all([f"index.embedder={embedder}",
                                                        f"llm={llm}"]))  # fmt: skip
    models, out = ModelStore(spacy_workers=workers), []
    with open_llm(recipe.llm, cache_path=None, checked=True) as client:
        for example in load_dataset("musique", 10):
            before = len(fake.bodies)
            prediction = answer_question(recipe, example, client, models=models)
            prompts = [body["messages"] for body in fake.bodies[before:]]
            steps = [attrs.evolve(step, usage=Usage()) for step in prediction.steps]  # no times
            out.append((prediction.answers, steps, prediction.decomposition, prompts))
    return out


@pytest.mark.parametrize("recipe_file", RECIPES)
def test_the_remote_embedder_on_the_standin_answers_as_hashed_bow(recipe_file: str) -> None:
    fake = FakeOpenAI([], reply=standin_reply)
    with serve(fake) as base:
        local = answered(recipe_file, "{kind: hashed_bow, dim: 64}", base, fake)
        remote = ("{kind: litellm, model: openai/standin-embed, dimensions: 64, "
                  f"api_base: '{base}'}}")  # fmt: skip
        first = answered(recipe_file, remote, base, fake)
        requests = len(fake.embedded)
        again = answered(recipe_file, remote, base, fake)
        in_workers = answered(recipe_file, remote, base, fake, workers=2)
    assert first == local  # candidates (each step's units), prompts, answers
    assert any(step.retrieved for _, steps, _, _ in local for step in steps)
    assert requests > 0 and len(fake.embedded) == requests  # the rerun was paid for already
    assert again == local
    assert in_workers == local  # spaCy in a threaded run's worker processes splits and tags alike
