"""Graph data for the browse site: a radial ownership layout computed once in Python.

XLTM sits in the centre, LTM trees, MTM branches and STM leaves on rings
around it; every subtree gets an angle proportional to its number of leaves,
so the layout is a single pass over the ownership tree (linear, no force
simulation in the browser). Life Archive records sit on a small inner ring
next to the root map they link to, Daily pages on an outer ring in date
order. ISTM files are raw sources, not documents, and are not drawn.

Edges are ownership (a document and its parent) and resolved wikilinks that
are not already an ownership edge. A missing parent keeps its place in the
layout (so its children stay grouped) but is not drawn.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from ..layers import XLTM_PATH
from .site import Site, _route, href

SPACING = 64.0  # minimum distance between neighbours on one ring, in layout units
RING_GAP = 220.0  # minimum distance between two rings
NODE_RADIUS = {0: 12.0, 1: 28.0, 2: 22.0, 3: 16.0, 4: 12.0, 5: 11.0}
TOP = -math.pi / 2
RING_FRACTION = {0: 0.14, 2: 0.36, 3: 0.68, 4: 1.0}  # share of the outer radius, at least


def graph_data(site: Site, from_file: str) -> dict[str, Any]:
    docs = [doc for doc in site.docs.values() if doc.markdown]
    index = {doc.path: number for number, doc in enumerate(docs)}
    positions = _layout(site, docs)
    nodes = []
    for doc in docs:
        x, y = positions.get(doc.path, (0.0, 0.0))
        nodes.append([round(x, 1), round(y, 1), doc.layer.number, doc.title, doc.path,
                      href(from_file, doc.file)])
    own: set[tuple[int, int]] = set()
    for doc in docs:
        parent = doc.route.parent_path
        if parent in index:
            own.add((index[doc.path], index[parent]))
    links: set[tuple[int, int]] = set()
    for doc in docs:
        for link in site.snap.facts[doc.path].links:
            target = site.resolve(link.target)
            if target in index and target != doc.path:
                pair = (index[doc.path], index[target])
                if pair not in own and pair[::-1] not in own and pair[::-1] not in links:
                    links.add(pair)
    return {
        "nodes": nodes,
        "own": sorted(own),
        "link": sorted(links),
        "radius": {str(number): size for number, size in NODE_RADIUS.items()},
    }


def _layout(site: Site, docs: list[Any]) -> dict[str, tuple[float, float]]:
    """Angles from the ownership tree, then ring radii wide enough for each ring's nodes."""
    angles = _angles(site)
    rings: dict[int, list[str]] = defaultdict(list)
    for path, (depth, _) in angles.items():
        rings[depth].append(path)
    archive = sorted(d.path for d in docs if d.layer.key == "life_archive")
    daily = sorted(d.path for d in docs if d.layer.key == "daily")
    for ring, paths in ((0, archive), (5, daily)):
        step = 2 * math.pi / max(1, len(paths))
        for number, path in enumerate(paths):
            angles[path] = (ring, TOP + step * (number + 0.5))
        rings[ring] = paths
    required: dict[int, float] = {}
    previous = 0.0
    for ring in (0, 2, 3, 4):  # inside out: archive, LTM, MTM, STM
        paths = rings.get(ring, [])
        if paths:
            gap = _min_gap(sorted(angles[path][1] for path in paths))
            required[ring] = max(previous + RING_GAP, SPACING / gap)
            previous = required[ring]
    # Spread the rings evenly out to the widest one, so the tree reads as a tree even when
    # thousands of leaves push the outer ring far out.
    outer = max(required.values(), default=RING_GAP)
    radius: dict[int, float] = {1: 0.0}
    previous = 0.0
    for ring in (0, 2, 3, 4):
        if ring in required:
            radius[ring] = max(required[ring], RING_FRACTION[ring] * outer, previous + RING_GAP)
            previous = radius[ring]
    if rings.get(5):
        gap = _min_gap(sorted(angles[path][1] for path in rings[5]))
        radius[5] = max(previous + RING_GAP, 1.08 * previous, SPACING / gap)
    positions = {}
    for path, (ring, angle) in angles.items():
        r = radius.get(ring, 0.0)
        positions[path] = (r * math.cos(angle), r * math.sin(angle))
    return positions


def _min_gap(sorted_angles: list[float]) -> float:
    if len(sorted_angles) < 2:
        return 2 * math.pi
    gaps = [b - a for a, b in zip(sorted_angles, sorted_angles[1:], strict=False)]
    gaps.append(2 * math.pi - (sorted_angles[-1] - sorted_angles[0]))
    return min(gaps)


def _angles(site: Site) -> dict[str, tuple[int, float]]:
    """Ring (layer number) and angle of every node of layers 01-04, missing parents included.

    A subtree's angle is proportional to its number of leaves, so siblings stay
    together and every leaf gets the same share of the circle.
    """
    children: dict[str, list[str]] = defaultdict(list)
    known: set[str] = {XLTM_PATH}
    for doc in site.docs.values():
        if not doc.layer.structured or doc.path == XLTM_PATH:
            continue
        path, route = doc.path, doc.route
        while route is not None and route.parent_path and path not in known:
            known.add(path)
            children[route.parent_path].append(path)
            path = route.parent_path
            route = site.docs[path].route if path in site.docs else _route(path)
    weight: dict[str, int] = {}
    for path in _postorder(children):
        weight[path] = max(1, sum(weight[child] for child in children.get(path, ())))
    angles: dict[str, tuple[int, float]] = {}
    stack: list[tuple[str, float, float, int]] = [(XLTM_PATH, TOP, TOP + 2 * math.pi, 1)]
    while stack:
        path, start, end, ring = stack.pop()
        angles[path] = (ring, (start + end) / 2)
        kids = sorted(children.get(path, ()))
        total = sum(weight[kid] for kid in kids) or 1
        cursor = start
        for kid in kids:
            span = (end - start) * weight[kid] / total
            stack.append((kid, cursor, cursor + span, ring + 1))
            cursor += span
    return angles


def _postorder(children: dict[str, list[str]]) -> list[str]:
    order: list[str] = []
    stack: list[tuple[str, bool]] = [(XLTM_PATH, False)]
    while stack:
        path, done = stack.pop()
        if done:
            order.append(path)
            continue
        stack.append((path, True))
        stack.extend((kid, False) for kid in children.get(path, ()))
    return order
