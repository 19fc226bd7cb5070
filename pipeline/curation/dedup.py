"""Exact and near duplicates, found with datasketch's MinHash LSH and confirmed with rapidfuzz.

Texts are normalised (case folded, only letters, digits and CJK characters kept), so punctuation and spacing
never hide a repeat. An exact repeat is found by its normalised text; a near one is a MinHash LSH candidate
(character 3-gram shingles, which suit Chinese as well as English) whose rapidfuzz ratio reaches the threshold.
The first text in order is the original; each later repeat names it. LSH keeps this linear in the number of
texts, where comparing all pairs would be quadratic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_KEEP = re.compile(r"[\w\u4e00-\u9fff]")
SHINGLE = 3
NUM_PERM = 128
#: LSH recall threshold on estimated Jaccard similarity: lower than the ratio threshold, so candidates are plenty.
LSH_THRESHOLD = 0.5
DEFAULT_NEAR_THRESHOLD = 0.9


def normalise(text: str) -> str:
    """Lower-case letters, digits and CJK characters of ``text``, nothing else."""
    return "".join(_KEEP.findall(text.lower()))


def shingles(normal: str) -> set[str]:
    """The character 3-grams of a normalised text (the text itself when shorter)."""
    if len(normal) <= SHINGLE:
        return {normal}
    return {normal[index : index + SHINGLE] for index in range(len(normal) - SHINGLE + 1)}


@dataclass(frozen=True)
class Repeat:
    """``of`` is the earlier key this text repeats; ``similarity`` the rapidfuzz ratio in [0, 1]."""

    of: str
    similarity: float
    method: Literal["exact", "near"]


class DuplicateIndex:
    """Texts seen so far; :meth:`check` says whether a new one repeats any of them, :meth:`add` remembers it."""

    def __init__(self, *, near_threshold: float = DEFAULT_NEAR_THRESHOLD) -> None:
        from datasketch import MinHashLSH

        self.near_threshold = near_threshold
        self._exact: dict[str, str] = {}
        self._normal: dict[str, str] = {}
        self._order: dict[str, int] = {}
        self._lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)

    def check(self, text: str) -> Repeat | None:
        """The earliest, most similar text this one repeats, or None."""
        from rapidfuzz import fuzz

        normal = normalise(text)
        if normal in self._exact:
            return Repeat(self._exact[normal], 1.0, "exact")
        if not normal:
            return None
        best: tuple[float, int, str] | None = None
        for key in self._lsh.query(_minhash(normal)):
            similarity = fuzz.ratio(normal, self._normal[key]) / 100.0
            if similarity >= self.near_threshold:
                candidate = (-similarity, self._order[key], key)
                best = candidate if best is None or candidate < best else best
        return None if best is None else Repeat(best[2], round(-best[0], 4), "near")

    def add(self, key: str, text: str) -> None:
        """Remember ``text`` under ``key`` (a key already added is ignored)."""
        if key in self._order:
            return
        normal = normalise(text)
        self._order[key] = len(self._order)
        self._normal[key] = normal
        self._exact.setdefault(normal, key)
        if normal:
            self._lsh.insert(key, _minhash(normal))


def _minhash(normal: str) -> object:
    from datasketch import MinHash

    minhash = MinHash(num_perm=NUM_PERM, seed=1)
    minhash.update_batch([shingle.encode("utf-8") for shingle in sorted(shingles(normal))])
    return minhash
