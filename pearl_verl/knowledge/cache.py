"""On-disk cache of decompositions, keyed by content hash, so a dataset is decomposed once.

Format (``pearl_verl.knowledge/decomposition@1``): one UTF-8 JSON file per problem at
``<cache_dir>/<hash[:2]>/<hash>.json`` holding :meth:`Decomposition.to_dict`::

    {"schema": "pearl_verl.knowledge/decomposition@1", "problem_id": "gsm8k-test-0000",
     "content_hash": "<sha256>", "units": ["addition", ...], "edges": [["addition", "subtraction"], ...],
     "steps": [{"text": "...", "units": ["subtraction"], "result": "9"}, ...],
     "source": "llm", "extractor": "llm:<model>:x1", "curriculum_version": "2025.1"}

The hash covers the question, the reference solution, the curriculum version and the extractor id,
so changing any of them misses the cache instead of serving a stale entry. Files are written
atomically (temporary file + rename), so concurrent workers sharing a directory never read half a
file, and two workers writing the same key write the same content. ``pearl-verl decompose`` fills
a cache for a whole dataset ahead of training.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

from pearl_verl.knowledge.curriculum import Curriculum
from pearl_verl.knowledge.decomposition import Decomposition, DecompositionError, decomposition_from_dict
from pearl_verl.write_whole import write_whole

logger = logging.getLogger(__name__)


class DecompositionCache:
    """A directory of decomposition files.

    Args:
        directory: created on first write.
    """

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, curriculum: Curriculum) -> Decomposition | None:
        """The stored decomposition for ``key``, or None when there is none.

        Raises:
            DecompositionError: when the stored file is unreadable or invalid (the caller decides
                whether to re-decompose; the decomposer does, and overwrites the file).
        """
        path = self.path(key)
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DecompositionError(f"Cache file {path} is unreadable: {exc}.", "malformed") from exc
        decomposition = decomposition_from_dict(data, curriculum)
        if decomposition.content_hash != key:
            raise DecompositionError(
                f"Cache file {path} holds hash {decomposition.content_hash}, not {key}.", "malformed"
            )
        return decomposition

    def put(self, decomposition: Decomposition) -> Path:
        """Write ``decomposition`` under its content hash (atomically) and return the path."""
        return write_whole(self.path(decomposition.content_hash),
                           json.dumps(decomposition.to_dict(), ensure_ascii=False, indent=1))

    def keys(self) -> Iterator[str]:
        """Content hashes of every stored file."""
        if self.directory.exists():
            for path in sorted(self.directory.glob("??/*.json")):
                yield path.stem
