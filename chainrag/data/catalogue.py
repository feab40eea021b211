"""What ``chainrag datasets`` lists: every named dataset and corpus, with its size, setting,
source and licence.

    for entry in catalogue():      # Entry(name="musique", kind="questions", count=100, ...)
        print(entry.name, entry.count, entry.licence.name)
    licence_text("musique")        # the licence's full text where it ships, else its name and URL

The files ship with chainrag (``chainrag/data/files``, see its README); ``$CHAINRAG_DATA`` points
the names at another copy.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from chainrag.core.paths import data_root
from chainrag.data.datasets import CORPORA, DATASETS, DatasetError, load_corpus, load_dataset


@attrs.frozen
class Licence:
    """A licence by name, with the file of its full text where one ships (relative to the data
    folder) and where it is published."""

    name: str
    url: str
    file: str | None = None


MUSIQUE = Licence(
    "CC BY 4.0",
    "https://creativecommons.org/licenses/by/4.0/legalcode",
    "LICENSE.MuSiQue.CC-BY-4.0.txt",
)
HOTPOTQA = Licence("CC BY-SA 4.0", "https://creativecommons.org/licenses/by-sa/4.0/legalcode")
TWOWIKI = Licence(
    "Apache-2.0",
    "https://www.apache.org/licenses/LICENSE-2.0",
    "LICENSE.2WikiMultihopQA.Apache-2.0.txt",
)
HIPPORAG = Licence("MIT", "https://opensource.org/license/mit", "hipporag/LICENSE.HippoRAG.txt")


@attrs.frozen
class About:
    """Where a named file comes from and under which licence."""

    source: str
    licence: Licence


ABOUT: dict[str, About] = {
    "musique": About("MuSiQue-Ans dev, the first 100 (via MIGRES)", MUSIQUE),
    "hotpotqa": About("HotpotQA dev distractor, 100 'hard' (via MIGRES)", HOTPOTQA),
    "2wiki": About("2WikiMultihopQA dev, the 82 with paragraphs (via MIGRES)", TWOWIKI),
    "musique_train": About("MuSiQue train, 100, HippoRAG's subset", HIPPORAG),
    "hotpotqa_train": About("HotpotQA train, 100, HippoRAG's subset", HIPPORAG),
    "musique_train_corpus": About("the passages of musique_train's questions (HippoRAG)", HIPPORAG),
    "hotpotqa_train_corpus": About(
        "the passages of hotpotqa_train's questions (HippoRAG)", HIPPORAG
    ),
    "2wiki_hipporag_corpus": About("2WikiMultihopQA passages, HippoRAG's corpus", HIPPORAG),
}
"""Each named dataset's and corpus's source and licence (tests/test_data.py checks that every
name has one)."""
QUESTION_SETTINGS = {
    "per_question": "each question over its own paragraphs",
    "shared_corpus": "one corpus for all questions (--index)",
}


@attrs.frozen
class Entry:
    """One line of ``chainrag datasets``."""

    name: str
    kind: str  # "questions" or "corpus"
    count: int
    setting: str
    file: str
    about: About


def catalogue(root: Path | None = None) -> list[Entry]:
    """Every named dataset (its questions counted) and corpus (its passages counted)."""
    root = root or data_root()
    entries = []
    for name, spec in DATASETS.items():
        count = len(load_dataset(name, root=root))
        setting = QUESTION_SETTINGS[spec.setting]
        entries.append(Entry(name, "questions", count, setting, spec.path, ABOUT[name]))
    for name, path in CORPORA.items():
        count = len(load_corpus(name, root=root))
        entries.append(Entry(name, "corpus", count, "passages to index", path, ABOUT[name]))
    return entries


DERIVED = (
    ("long:NAME", "NAME's questions, each with its own paragraphs padded to LongBench's mean "
                  "length (the ChainRAG paper's setting); long:NAME:PATH pads your own "
                  "question file so"),
    ("pooled:NAME", "NAME's questions over one corpus pooled from all their paragraphs"),
    ("NAME[A:B]", "questions A+1 to B of any of these (long:2wiki[30:60])"),
    ("PATH", "your own file: MuSiQue, HotpotQA/2Wiki or LongBench records, JSON or JSONL "
             "(format detected); longbench:PATH names LongBench's"),
)  # fmt: skip
"""The names made from the others, for the listing."""


def licence_text(name: str, root: Path | None = None) -> str:
    """The licence of a named dataset or corpus: its full text where it ships with the data,
    else its name and where it is published."""
    if name not in ABOUT:
        raise DatasetError(f"no named dataset or corpus {name!r}; known: {', '.join(ABOUT)}")
    licence = ABOUT[name].licence
    if licence.file is not None:
        path = (root or data_root()) / licence.file
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return f"{name}: {licence.name}, {licence.url} (the full text does not ship with the data)\n"
