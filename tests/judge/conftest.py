"""Fixtures for judge tests: judge outputs in the exact output contract (episodes: tests/conftest.py)."""

import json

import pytest

from pearl_verl.dims import DIMENSIONS
from pearl_verl.judge.rubric import RUBRIC


def output_text(overrides=None, rationale="evidence in turn 2", drop=(), extra=None):
    """A judge output (JSON text): every criterion at its top score unless overridden by id.

    Each criterion's rationale is ``rationale`` followed by the criterion in words, ``"evidence in turn 2
    (final answer)"``: one rationale for every criterion is junk to the parser (pearl_verl.judge.sanity).
    """
    overrides = overrides or {}
    body = {}
    for dimension in DIMENSIONS:
        body[dimension] = {
            c.key: {"score": overrides.get(c.id, c.high), "rationale": f"{rationale} ({c.key.replace('_', ' ')})"}
            for c in RUBRIC.for_dimension(dimension)
            if c.id not in drop
        }
    body.update(extra or {})
    return json.dumps(body)


@pytest.fixture
def make_output():
    return output_text
