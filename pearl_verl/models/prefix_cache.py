"""Each dialogue's keys and values, kept between its tutor turns, so that a turn encodes only the new tokens.

HF ``generate`` encodes its whole prompt at every call. A tutoring dialogue asks for a tutor turn up to 12
times, and each prompt is the last one plus the tutor's reply and the student's answer: encoding the
dialogue again at every turn, in batches left-padded to their longest prompt, was most of the ``hf``
rollout server's time (BENCHMARKS.md, "Where a validation's time goes"). This is vLLM's prefix caching
for one process, found by content as vLLM finds it (verl sends every turn with a fresh request id): each
kept sequence is indexed by the hashes of its blocks of :data:`BLOCK` tokens, each hash chained to the
ones before it; a prompt's longest run of indexed blocks names a kept sequence, which is reused up to the
last token the two share. A kept sequence that a longer one extends is dropped, and all are dropped when
the weights change (the old weights computed them).

A batch mixes dialogues with kept prefixes of different lengths: :func:`batch_cache` left-pads each to the
longest, and the new tokens follow, left-padded again; positions come from the attention mask, as HF
``generate`` computes them, so a row's tokens keep the positions they had when they were encoded.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

Layers = list[tuple[torch.Tensor, torch.Tensor]]
"""Per decoder layer: keys and values of one sequence, each (kv heads, tokens, head dim)."""

DEFAULT_MAX_BYTES = 2 << 30
BLOCK = 16


@dataclass
class _Entry:
    tokens: list[int]
    layers: Layers
    nbytes: int
    blocks: list[int]


@dataclass
class Hit:
    """What a prompt reuses: its first ``length`` tokens' keys and values, from the kept sequence ``source``."""

    length: int = 0
    layers: Layers | None = None
    source: int | None = None
    covers_source: bool = False  # the prompt holds all of the source's tokens: a sequence stored from it replaces it


def reusable(model: torch.nn.Module) -> bool:
    """Whether every layer's cache holds all past tokens (no sliding window): only then can a prefix be cut out."""
    layers = DynamicCache(config=model.config).layers
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


def _block_hashes(tokens: list[int]) -> Iterator[int]:
    chained = 0
    for start in range(0, len(tokens) - BLOCK + 1, BLOCK):
        chained = hash((chained, *tokens[start : start + BLOCK]))
        yield chained


def _shared_prefix(a: list[int], b: list[int], known: int) -> int:
    """How many leading tokens ``a`` and ``b`` share, given that their block hashes agree on ``known`` tokens."""
    if a[:known] != b[:known]:  # a hash collision: nothing is known to be shared
        return 0
    n = min(len(a), len(b))
    for i in range(known, n):
        if a[i] != b[i]:
            return i
    return n


class PrefixCache:
    """The least recently used kept sequences go first once ``max_bytes`` is full.

    Generation looks up and stores in the server's worker thread while verl may clear from its event loop: a lock
    keeps the two apart.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.reused_tokens = 0  # prompt tokens not encoded again, since the server started
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._blocks: dict[int, set[int]] = {}  # chained block hash -> the kept sequences that hold that block
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._blocks.clear()
            self.nbytes = 0

    def lookup(self, prompt_ids: list[int]) -> Hit:
        """The longest kept prefix of the prompt, cut to its length (at least one prompt token is left to encode:
        generation starts from the last prompt token's logits)."""
        with self._lock:
            return self._lookup(prompt_ids)

    def _lookup(self, prompt_ids: list[int]) -> Hit:
        known, holders = 0, set()
        for count, chained in enumerate(_block_hashes(prompt_ids), 1):
            found = self._blocks.get(chained)
            if not found:
                break
            known, holders = count * BLOCK, found
        # The dialogues of one problem share their first prompt: the holder that shares the most goes on past it.
        shared, source = max(((_shared_prefix(self._entries[key].tokens, prompt_ids, known), key) for key in holders),
                             default=(0, None))
        length = min(shared, len(prompt_ids) - 1)
        if source is None or length <= 0:
            return Hit()
        entry = self._entries[source]
        self._entries.move_to_end(source)
        self.reused_tokens += length
        return Hit(length, [(k[:, :length], v[:, :length]) for k, v in entry.layers], source,
                   covers_source=shared == len(entry.tokens))

    def store(self, tokens: list[int], layers: Layers, replaces: int | None = None) -> None:
        """Keep a sequence's keys and values; ``replaces`` names a kept sequence it extends, dropped now."""
        with self._lock:
            self._store(tokens, layers, replaces)

    def _store(self, tokens: list[int], layers: Layers, replaces: int | None) -> None:
        if replaces is not None and replaces in self._entries:
            self._drop(replaces)
        nbytes = sum(k.nbytes + v.nbytes for k, v in layers)
        if len(tokens) < BLOCK or nbytes > self.max_bytes:
            return
        while self._entries and self.nbytes + nbytes > self.max_bytes:
            self._drop(next(iter(self._entries)))
        key = next(self._ids)
        entry = _Entry(tokens, layers, nbytes, list(_block_hashes(tokens)))
        self._entries[key] = entry
        self.nbytes += nbytes
        for chained in entry.blocks:
            self._blocks.setdefault(chained, set()).add(key)

    def _drop(self, key: int) -> None:
        entry = self._entries.pop(key)
        self.nbytes -= entry.nbytes
        for chained in entry.blocks:
            holders = self._blocks[chained]
            holders.discard(key)
            if not holders:
                del self._blocks[chained]


def batch_cache(hits: list[Hit], width: int) -> DynamicCache:
    """One cache of ``width`` positions for a batch: each row's reused keys and values right-aligned, zeros before.

    Rows that reuse nothing are all padding here; the attention mask hides the padding.
    """
    template = next(hit.layers for hit in hits if hit.layers is not None)
    batch = []
    for index, (keys, values) in enumerate(template):
        k = keys.new_zeros((len(hits), keys.shape[0], width, keys.shape[2]))
        v = values.new_zeros((len(hits), values.shape[0], width, values.shape[2]))
        for row, hit in enumerate(hits):
            if hit.layers is not None:
                k[row, :, width - hit.length :] = hit.layers[index][0]
                v[row, :, width - hit.length :] = hit.layers[index][1]
        batch.append((k, v))
    return DynamicCache(ddp_cache_data=batch)


def row_layers(cache: DynamicCache, row: int, positions: torch.Tensor) -> Layers:
    """One row's keys and values at ``positions`` of a batch's cache (indexing copies them out of it)."""
    return [(layer.keys[row][:, positions], layer.values[row][:, positions]) for layer in cache.layers]
