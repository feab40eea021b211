"""A corpus of any size as text, for ``chainrag index`` end to end at a million sentences: copies
of a real corpus index's passages, renamed as bench/corpus_scale.py renames its copies' entities
(Heaps' law fitted on the real corpus), but in the text itself.

    .venv/bin/python bench/synthetic_corpus.py --index DIR --sentences 1000000 --out FILE
        [--seed 0]

DIR is a corpus index of the real corpus, built with any embedder (only its passages, sentences
and mentions are read), e.g. ``chainrag index recipes/chainrag/ansint.yaml --corpus
2wiki_hipporag_corpus --corpus dev:2wiki --out-dir DIR --set
'index.embedder={kind: hashed_bow}'`` (23,308 sentences). Copy 0 is the real passages as they
are. In copy c ≥ 1 each passage is its real text, where

- each mention of an entity that copy c renames (bench/corpus_scale.py's ``copy_vocabulary``:
  chance k/(df + k), k from Heaps' β) is followed by a capitalised pseudo-word of that entity
  and copy ("Paris" → "Paris Velmora"), so that spaCy reads a new name there;
- each sentence without such a mention gets a lowercase pseudo-word in brackets before its
  last punctuation, so that no sentence's text is another copy's: a store by text (a remote
  embedder's) pays for every sentence, as it would for a real corpus of that size.

Written as JSON Lines of ``{title, text}`` (a copy's titles end with `` (copy c)``), up to the
passage at which the real sentence counts reach ``--sentences``. What it is not: real text. A
mention is found by its normalised name in its sentence (case and spaces ignored); one not
found is left as it is, and the count of those is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import sqlite3
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_scale import copy_vocabulary, heaps_beta, read_real

SYLLABLES = ("ka", "ve", "lo", "mi", "tor", "an", "sel", "ri", "du", "ne", "vo", "bra", "li",
             "zen", "ho", "ma")  # fmt: skip


def pseudo_word(*key: object) -> str:
    """A made-up word of three syllables, the same for the same key."""
    raw = hashlib.blake2b(repr(key).encode(), digest_size=3).digest()
    return "".join(SYLLABLES[b % len(SYLLABLES)] for b in raw)


def name_pattern(names: list[str]) -> re.Pattern[str]:
    """One pattern for all of ``names`` (longest first, so that no replacement nests in another),
    each as its words with any spaces between, case ignored, on word boundaries."""
    ordered = sorted(set(names), key=len, reverse=True)
    parts = [r"\s+".join(map(re.escape, name.split())) for name in ordered]
    return re.compile(r"(?<!\w)(" + "|".join(parts) + r")(?!\w)", re.IGNORECASE)


ENDING = re.compile(r"[.!?\"'”’)\]]*\s*$")


def copied_sentence(text: str, renamed: dict[str, str], key: tuple[int, int]) -> tuple[str, int]:
    """``text`` in a copy: each mention of a ``renamed`` name (normalised → pseudo-word) followed
    by its pseudo-word, or, where there is none, a bracketed marker before the last
    punctuation; and how many of those names were not found."""
    if renamed:
        found: set[str] = set()

        def extend(match: re.Match[str]) -> str:
            name = " ".join(match.group(0).split()).casefold()
            found.add(name)
            return f"{match.group(0)} {renamed[name]}"

        out = name_pattern(list(renamed)).sub(extend, text)
        if found:
            return out, len(set(renamed) - found)
    end = ENDING.search(text)
    cut = end.start() if end else len(text)
    return f"{text[:cut]} ({pseudo_word(*key)}){text[cut:]}", len(renamed)


Sentences = dict[int, list[tuple[int, int, int]]]
"""Each passage's sentences (sid, start, end), by passage number from 0."""


def read_passages(folder: Path) -> tuple[list[tuple[str, str]], Sentences]:
    """The real passages (title, text) by pid from 0, and each one's sentences (sid, start, end)."""
    uri = f"file:{folder / 'corpus.sqlite'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        rows = db.execute("SELECT pid, title, text FROM passages ORDER BY pid").fetchall()
        first = rows[0][0]
        sentences: Sentences = defaultdict(list)
        query = "SELECT sid, passage, start, end FROM sentences ORDER BY sid"
        for sid, passage, start, end in db.execute(query):
            sentences[passage - first].append((sid, start, end))
    return [(title, text) for _, title, text in rows], sentences


def copies(folder: Path, target: int, seed: int) -> Iterator[tuple[int, str, str, int, int]]:
    """(copy, title, text, sentences, names not found) of each passage written, copy by copy,
    until the sentences reach ``target``."""
    real = read_real(folder)
    beta = heaps_beta(real, seed)
    vocab = sorted({e for row in real.entities for e in row})
    column = {e: j for j, e in enumerate(vocab)}
    df = np.bincount([column[e] for row in real.entities for e in set(row)], minlength=len(vocab))
    passages, sentences = read_passages(folder)
    written, copy = 0, 0
    while written < target:
        names = vocab if copy == 0 else copy_vocabulary(vocab, df, beta, copy, seed)
        renamed = {v: pseudo_word(v, copy).capitalize()
                   for v, n in zip(vocab, names, strict=True) if n != v}  # fmt: skip
        for pid, (title, text) in enumerate(passages):
            rows = sentences[pid]
            if copy == 0:
                yield 0, title, text, len(rows), 0
            else:
                made, missing = copied_passage(text, rows, real.entities, renamed, copy)
                yield copy, f"{title} (copy {copy})", made, len(rows), missing
            written += len(rows)
            if written >= target:
                return
        copy += 1


def copied_passage(text: str, rows: list[tuple[int, int, int]], entities: list[list[str]],
                   renamed: dict[str, str], copy: int) -> tuple[str, int]:  # fmt: skip
    """A passage's text in copy ``copy``: each sentence copied (:func:`copied_sentence`), the text
    between sentences kept."""
    pieces, at, missing = [], 0, 0
    for sid, start, end in rows:
        here = {n: renamed[n] for n in entities[sid] if n in renamed}
        sentence, lost = copied_sentence(text[start:end], here, (sid, copy))
        pieces += [text[at:start], sentence]
        at, missing = end, missing + lost
    pieces.append(text[at:])
    return "".join(pieces), missing


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--index", type=Path, required=True, help="a corpus index of real text")
    parser.add_argument("--sentences", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, required=True, help="the corpus, JSON Lines")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not (args.index / "corpus.sqlite").is_file():
        raise SystemExit(f"{args.index} holds no corpus index (no corpus.sqlite)")
    total = missing = passages = 0
    last = -1
    with args.out.open("w") as out:
        for copy, title, text, count, lost in copies(args.index, args.sentences, args.seed):
            out.write(json.dumps({"title": title, "text": text}) + "\n")
            total, missing, passages = total + count, missing + lost, passages + 1
            if copy != last:
                print(f"copy {copy}: {total:,} sentences so far", file=sys.stderr, flush=True)
                last = copy
    print(f"{args.out}: {passages:,} passages, about {total:,} sentences (as the real index "
          f"split them), {missing:,} renamed mentions not found in their sentence")  # fmt: skip


if __name__ == "__main__":
    main()
