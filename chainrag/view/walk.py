"""One question's walk as a picture: the part of the sentence graph a method's steps touched —
seeds, the sentences each hop added, the gold evidence (reached or missed) — laid out in
columns by step and hop and drawn as SVG, edges coloured by layer (EC / SS / SA).

    walk = walk_of(record.trace.steps, gold, missed, layers)   # nodes and edges
    svg = walk_svg(walk, layout(walk), label)                   # the picture

The hop a sentence was added at is its breadth-first distance from the step's seeds in the
graph the walk used (``iterative_hops`` adds every sentence one hop further at once, so the two
agree); without the graph, the hops of a walk of two hops or more are unknown and no edge is
drawn. A node sits in the column of the first step and hop that reached it (drawn as a seed if
it was one in any step, so a later step's seeds may sit in an earlier column); an edge joins a
sentence to up to :data:`MAX_PARENTS` sentences of its own step one hop nearer the seeds that
it is linked to, once per layer linking them. A gold sentence no step reached sits in the last
column, joined (dashed) to the touched sentences it is linked to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape

import attrs
import numpy as np
from scipy import sparse

from chainrag.core.types import StepTrace

MAX_PARENTS = 3
"""Most edges drawn into one node (the strongest links to the hop before)."""

MAX_ROWS = 40
"""Most nodes stacked in one column before it wraps into a second."""

LAYER_COLOURS = {"ec": "#d95f02", "ss": "#377eb8", "sa": "#4daf4a"}
"""Edge colour of the paper's layers; another layer gets one of :data:`OTHER_COLOURS`."""

OTHER_COLOURS = ("#7570b3", "#e7298a", "#666666")

MISSED = -1
"""The step of a gold sentence no step reached."""

MISSED_COLUMN = 1 << 30
UNKNOWN_HOP = 1 << 20
"""Column keys: missed gold after every step; hops unknown (no graph) after a step's seeds."""


@attrs.frozen
class Node:
    """A sentence (or chunk) of the picture.

    Attributes:
        unit: Its index in the question's index.
        step: The first step that reached it (0-based), or :data:`MISSED`.
        hop: The hop of that step that added it: 0 for a seed, None where unknown.
        gold: Whether it covers gold evidence.
        steps: Every step that reached it.
        seed_of: The steps it was a seed of.
    """

    unit: int
    step: int
    hop: int | None
    gold: bool
    steps: tuple[int, ...]
    seed_of: tuple[int, ...] = ()

    @property
    def seed(self) -> bool:
        return bool(self.seed_of)

    @property
    def column(self) -> tuple[int, int]:
        """Where it is drawn: (step, hop), a missed gold sentence after every step."""
        if self.step == MISSED:
            return (MISSED_COLUMN, 0)
        return (self.step, UNKNOWN_HOP if self.hop is None else self.hop)


@attrs.frozen
class Edge:
    """A link of layer ``layer`` from ``source`` (nearer the seeds) to ``target``."""

    source: int
    target: int
    layer: str
    missed: bool = False


@attrs.frozen
class Walk:
    """The nodes and edges of a picture; ``graph`` tells whether the edges and hops come from
    the question's graph (False: only what the trace records)."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    graph: bool
    layers: tuple[str, ...] = ()


# --------------------------------------------------------------------------- hops and edges


def combined(layers: Mapping[str, sparse.csr_matrix]) -> sparse.csr_matrix | None:
    """The layers summed (None without layers)."""
    total: sparse.csr_matrix | None = None
    for matrix in layers.values():
        total = matrix if total is None else total + matrix
    return None if total is None else sparse.csr_matrix(total)


def hop_levels(
    units: Sequence[int], seeds: Sequence[int], hops: int, adjacency: sparse.csr_matrix | None
) -> list[int | None]:
    """The hop each of ``units`` was added at: its breadth-first distance from ``seeds`` over
    ``adjacency`` (see the module docstring). Without a graph, seeds are hop 0 and the others
    hop 1 when the walk took one hop, else unknown (None)."""
    seed_set = set(seeds)
    if adjacency is None:
        rest: int | None = 1 if hops == 1 else None
        return [0 if u in seed_set else rest for u in units]
    n = adjacency.shape[0]
    level = np.full(n, -1, dtype=np.int64)
    frontier = np.unique(np.asarray([s for s in seeds if 0 <= s < n], dtype=np.int64))
    level[frontier] = 0
    for depth in range(1, max(hops, 0) + 1):
        if frontier.size == 0:
            break
        reached = np.unique(adjacency[frontier].indices)
        frontier = reached[level[reached] < 0]
        level[frontier] = depth
    return [int(level[u]) if 0 <= u < n and level[u] >= 0 else None for u in units]


def _parents(
    unit: int, candidates: Sequence[int], adjacency: sparse.csr_matrix, most: int
) -> list[int]:
    """Up to ``most`` of ``candidates`` linked to ``unit``, strongest link first, then by index."""
    row = adjacency.getrow(unit)
    weight = dict(zip(row.indices.tolist(), row.data.tolist(), strict=True))
    linked = [c for c in candidates if weight.get(c, 0.0) > 0]
    return sorted(linked, key=lambda c: (-weight[c], c))[:most]


def _linked_layers(a: int, b: int, layers: Mapping[str, sparse.csr_matrix]) -> list[str]:
    return [name for name, matrix in layers.items() if matrix[a, b] > 0]


def walk_of(
    steps: Sequence[StepTrace],
    gold: set[int],
    missed: Sequence[int],
    layers: Mapping[str, sparse.csr_matrix] | None,
) -> Walk:
    """The picture of a method's steps (see the module docstring).

    Args:
        steps: The trace's steps; a step's units are its expansion's, else what it retrieved.
        gold: The units that cover gold evidence.
        missed: Units of gold evidence no step covered, drawn in the last column.
        layers: The edge layers the walk used (weight > 0), or None without the graph.
    """
    adjacency = combined(layers) if layers else None
    first: dict[int, tuple[int, int | None]] = {}
    reached_by: dict[int, list[int]] = {}
    seed_of: dict[int, list[int]] = {}
    edges: list[Edge] = []
    for s, step in enumerate(steps):
        units = list(step.expansion.units if step.expansion is not None else step.retrieved)
        seeds = list(step.expansion.seeds) if step.expansion is not None else units
        hops = step.expansion.hops if step.expansion is not None else 0
        levels = hop_levels(units, seeds, hops, adjacency)
        for unit in seeds:
            seed_of.setdefault(unit, []).append(s)
        for unit, level in zip(units, levels, strict=True):
            first.setdefault(unit, (s, level))
            if s not in reached_by.setdefault(unit, []):
                reached_by[unit].append(s)
        if adjacency is not None and layers is not None:
            edges += hop_edges(units, levels, adjacency, layers)
    nodes = [Node(u, s, h, u in gold, tuple(reached_by[u]), tuple(seed_of.get(u, ())))
             for u, (s, h) in first.items()]  # fmt: skip
    for unit in (u for u in dict.fromkeys(missed) if u not in first):
        nodes.append(Node(unit, MISSED, None, True, ()))
        if adjacency is not None and layers is not None and unit < adjacency.shape[0]:
            edges += missed_edges(unit, list(first), adjacency, layers)
    return Walk(tuple(nodes), tuple(dict.fromkeys(edges)), layers is not None, tuple(layers or ()))


def hop_edges(
    units: Sequence[int],
    levels: Sequence[int | None],
    adjacency: sparse.csr_matrix,
    layers: Mapping[str, sparse.csr_matrix],
) -> list[Edge]:
    """The edges one step's walk took: from each unit of a hop to its likeliest parents in
    the hop before it (:data:`MAX_PARENTS`), one per layer that links them."""
    by_level: dict[int, list[int]] = {}
    for unit, level in zip(units, levels, strict=True):
        if level is not None:
            by_level.setdefault(level, []).append(unit)
    edges = []
    for unit, level in zip(units, levels, strict=True):
        if not level:
            continue
        for parent in _parents(unit, by_level.get(level - 1, []), adjacency, MAX_PARENTS):
            edges += [Edge(parent, unit, name) for name in _linked_layers(parent, unit, layers)]
    return edges


def missed_edges(
    unit: int,
    touched: Sequence[int],
    adjacency: sparse.csr_matrix,
    layers: Mapping[str, sparse.csr_matrix],
) -> list[Edge]:
    """The edges (dashed) from the units the walk touched to a gold ``unit`` it missed."""
    return [
        Edge(near, unit, name, missed=True)
        for near in _parents(unit, touched, adjacency, MAX_PARENTS)
        for name in _linked_layers(near, unit, layers)
    ]


# --------------------------------------------------------------------------- layout


@attrs.frozen
class Layout:
    """Node positions (unit -> x, y), the columns' titles at their x, and the picture's size."""

    positions: Mapping[int, tuple[float, float]]
    columns: tuple[tuple[float, str], ...]
    width: float
    height: float


COLUMN_GAP = 120.0
SUB_COLUMN_GAP = 46.0
ROW_GAP = 16.0
TOP = 58.0
LEFT = 30.0


def column_title(key: tuple[int, int]) -> str:
    step, hop = key
    if step == MISSED_COLUMN:
        return "gold, missed"
    where = "seeds" if hop == 0 else "hops" if hop == UNKNOWN_HOP else f"hop {hop}"
    return f"step {step + 1}: {where}"


def layout(walk: Walk) -> Layout:
    """Columns by (step, hop), left to right; in a column, nodes ordered by the mean height of
    the nodes they are linked from (so edges cross less), then by unit; a column of more than
    :data:`MAX_ROWS` nodes wraps into sub-columns. Deterministic: the same walk gives the same
    picture."""
    columns: dict[tuple[int, int], list[Node]] = {}
    for node in walk.nodes:
        columns.setdefault(node.column, []).append(node)
    into: dict[int, list[int]] = {}
    for edge in walk.edges:
        into.setdefault(edge.target, []).append(edge.source)
    positions: dict[int, tuple[float, float]] = {}
    titles: list[tuple[float, str]] = []
    x = LEFT
    tallest = 0
    for key in sorted(columns):
        members = columns[key]

        def height_of(node: Node) -> float:
            ys = [positions[p][1] for p in into.get(node.unit, []) if p in positions]
            return sum(ys) / len(ys) if ys else float("inf")

        seed_order = key[1] == 0 and key[0] == 0
        members.sort(key=(lambda n: 0.0) if seed_order else height_of)
        titles.append((x, column_title(key)))
        subs = -(-len(members) // MAX_ROWS)  # sub-columns of equal height
        rows = -(-len(members) // subs)
        for i, node in enumerate(members):
            sub, row = divmod(i, rows)
            positions[node.unit] = (x + sub * SUB_COLUMN_GAP, TOP + row * ROW_GAP)
            tallest = max(tallest, row + 1)
        x += COLUMN_GAP + (subs - 1) * SUB_COLUMN_GAP
    width = max(x - COLUMN_GAP + 90.0, legend(walk)[1] + 10.0)
    return Layout(positions, tuple(titles), width, TOP + tallest * ROW_GAP + 10.0)


# --------------------------------------------------------------------------- SVG


def layer_colour(name: str, names: Sequence[str]) -> str:
    """The colour of an edge layer: the paper's three keep theirs; others take the rest."""
    if name.lower() in LAYER_COLOURS:
        return LAYER_COLOURS[name.lower()]
    others = [n for n in names if n.lower() not in LAYER_COLOURS]
    return OTHER_COLOURS[others.index(name) % len(OTHER_COLOURS)] if name in others else "#999"


def legend(walk: Walk) -> tuple[str, float]:
    """The picture's legend (node kinds, then the walk's layers) and the x where it ends."""
    parts = ['<g class="legend" font-size="11">']
    x = LEFT
    for label, cls in (
        ("seed", "seed"),
        ("added by a hop", "hop"),
        ("gold", "gold"),
        ("gold, missed", "missed"),
    ):
        parts.append(
            f'<circle class="{cls}" cx="{x}" cy="12" r="5"/><text x="{x + 9}" y="16">{label}</text>'
        )
        x += 22 + 6.5 * len(label)
    for name in walk.layers:
        colour = layer_colour(name, walk.layers)
        parts.append(
            f'<line x1="{x}" y1="12" x2="{x + 18}" y2="12" stroke="{colour}" '
            f'stroke-width="2"/><text x="{x + 22}" y="16">{escape(name.upper())}</text>'
        )
        x += 34 + 7 * len(name)
    parts.append("</g>")
    return "".join(parts), x


def walk_svg(walk: Walk, at: Layout, label: Callable[[int], str], *, ident: str = "") -> str:
    """The picture as an inline ``<svg>``; ``label(unit)`` is a node's tooltip (its text), and
    every node carries ``data-unit`` so the page can point at the unit's line."""
    out = [
        f'<svg class="walk" xmlns="http://www.w3.org/2000/svg" id="{escape(ident)}" '
        f'width="{at.width:.0f}" height="{at.height:.0f}" '
        f'viewBox="0 0 {at.width:.0f} {at.height:.0f}" role="img" '
        f'aria-label="graph walk: {len(walk.nodes)} sentences, {len(walk.edges)} edges">'
    ]
    out.append(legend(walk)[0])
    for x, title in at.columns:
        out.append(
            f'<text class="column" x="{x - 6:.1f}" y="{TOP - 18:.1f}">{escape(title)}</text>'
        )
    out += edge_paths(walk, at)
    out += node_marks(walk, at, label)
    return "\n".join(out) + "</svg>"


def edge_paths(walk: Walk, at: Layout) -> list[str]:
    """The walk's edges as SVG paths, coloured by layer, dashed to a missed gold unit."""
    layers = list(walk.layers)
    out = ['<g class="edges">']
    count: dict[tuple[int, int], int] = {}
    for edge in walk.edges:
        if edge.source not in at.positions or edge.target not in at.positions:
            continue
        (x1, y1), (x2, y2) = at.positions[edge.source], at.positions[edge.target]
        pair = (edge.source, edge.target)
        shift = 2.5 * count.get(pair, 0)  # parallel edges of several layers, side by side
        count[pair] = count.get(pair, 0) + 1
        bend = (x1 + x2) / 2
        dash = ' stroke-dasharray="4 3"' if edge.missed else ""
        out.append(
            f'<path d="M{x1:.1f},{y1 + shift:.1f} C{bend:.1f},{y1 + shift:.1f} '
            f'{bend:.1f},{y2 + shift:.1f} {x2:.1f},{y2 + shift:.1f}" '
            f'stroke="{layer_colour(edge.layer, layers)}" data-layer="{escape(edge.layer)}"'
            f"{dash}/>"
        )
    out.append("</g>")
    return out


def node_marks(walk: Walk, at: Layout, label: Callable[[int], str]) -> list[str]:
    """The walk's units as SVG circles (seeds larger, gold marked) with their tooltips."""
    out = ['<g class="nodes">']
    for node in walk.nodes:
        x, y = at.positions[node.unit]
        kind = "missed" if node.step == MISSED else "seed" if node.seed else "hop"
        classes = f"node {kind}" + (" gold" if node.gold else "")
        radius = 6 if node.seed else 4.5
        steps = ", ".join(str(s + 1) for s in node.steps) or "none"
        seeded = ", ".join(str(s + 1) for s in node.seed_of)
        role = f"; seed of step {seeded}" if seeded else ""
        tip = f"[{node.unit}] reached by step {steps}{role}: {label(node.unit)}"
        out.append(
            f'<g class="{classes}" data-unit="{node.unit}">'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}"/>'
            f'<text x="{x + 8:.1f}" y="{y + 3.5:.1f}">{node.unit}</text>'
            f"<title>{escape(tip)}</title></g>"
        )
    out.append("</g>")
    return out
