"""The web app over HTTP (no browser): sign-in, CSRF, revoked sessions, votes in real terms, duplicates, escaping,
hiding, and the migration of an older database."""

import re
import sqlite3
import time

import pytest
from fastapi.testclient import TestClient

from pearl_verl.cli import build_parser, main
from pearl_verl.compare.app import create_app
from pearl_verl.compare.order import left_side
from pearl_verl.compare.pairs import read_pairs
from pearl_verl.compare.store import Store, hash_token
from pearl_verl.listen import http_url, is_loopback


@pytest.fixture
def study(hostile_run, tmp_path):
    pairs_file = tmp_path / "pairs.jsonl"
    assert main(["compare", "build-pairs", str(hostile_run), "--out", str(pairs_file)]) == 0
    store = Store(f"sqlite:///{tmp_path / 'study.db'}")
    store.load_pairs(read_pairs(pairs_file))
    tokens = {name: store.add_annotator(name) for name in ("alice", "bob")}
    return store, tokens, read_pairs(pairs_file)


def csrf_of(html):
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def sign_in(client, token):
    page = client.get(f"/login?token={token}")
    response = client.post("/login", data={"token": token, "csrf_token": csrf_of(page.text)})
    assert response.status_code == 200 and response.url.path == "/compare"
    return response


def shown(store, html, name):
    """(pair, the real side shown as A) of a compare page, found from its hidden public id."""
    public_id = re.search(r'name="pair" value="([^"]+)"', html).group(1)
    annotator = next(a for a in store.annotators() if a.name == name)
    return store.pair(public_id), left_side(store.order_salt, public_id, annotator.slot)


def test_posts_without_the_session_token_are_refused(study):
    store, tokens, _ = study
    client = TestClient(create_app(store))
    assert client.post("/login", data={"token": tokens["alice"]}).status_code == 403  # no session yet
    page = client.get("/login")
    assert client.post("/login", data={"token": tokens["alice"], "csrf_token": "forged"}).status_code == 403
    compare = sign_in(client, tokens["alice"])
    public_id = re.search(r'name="pair" value="([^"]+)"', compare.text).group(1)
    vote = {"pair": public_id, "choice": "A"}
    assert client.post("/vote", data=vote).status_code == 403
    assert client.post("/vote", data={**vote, "csrf_token": csrf_of(page.text)}).status_code == 403  # pre-login token
    assert client.post("/logout", data={}).status_code == 403
    assert store.votes() == []
    outsider = TestClient(create_app(store))  # another browser: its own session, so the token does not carry over
    outsider.get("/login")
    assert outsider.post("/vote", data={**vote, "csrf_token": csrf_of(compare.text)}).status_code == 403


def test_votes_are_stored_in_real_terms_and_only_once(study):
    store, tokens, _ = study
    client = TestClient(create_app(store))
    page = sign_in(client, tokens["alice"])
    assert 'data-done="0" data-total="3"' in page.text
    stored, left = shown(store, page.text, "alice")
    form = {"pair": stored.public_id, "choice": "A", "dim_leak": "B", "dim_guide": "", "comment": " fine ",
            "csrf_token": csrf_of(page.text)}  # fmt: skip
    after = client.post("/vote", data=form)
    assert after.status_code == 200 and 'data-done="1" data-total="3"' in after.text
    (vote,) = store.votes()
    right = "b" if left == "a" else "a"
    assert (vote.outcome, vote.left_side, dict(vote.dims), vote.comment) == (left, left, {"leak": right}, "fine")
    again = client.post("/vote", data={**form, "csrf_token": csrf_of(after.text)})
    assert again.status_code == 409 and "already voted" in again.text
    assert len(store.votes()) == 1
    assert stored.public_id not in after.text  # the next pair is another one


def test_bad_votes_and_missing_sign_in(study):
    store, tokens, _ = study
    client = TestClient(create_app(store))
    assert client.get("/compare", follow_redirects=False).headers["location"] == "/login"
    page = client.get("/login")
    bad = client.post("/login", data={"token": "wrong", "csrf_token": csrf_of(page.text)})
    assert bad.status_code == 403 and "not valid" in bad.text
    page = sign_in(client, tokens["bob"])
    stored, _ = shown(store, page.text, "bob")
    token = csrf_of(page.text)
    assert (
        client.post("/vote", data={"pair": stored.public_id, "choice": "left", "csrf_token": token}).status_code == 400
    )
    assert client.post("/vote", data={"pair": "nope", "choice": "A", "csrf_token": token}).status_code == 404
    too_long = {"pair": stored.public_id, "choice": "A", "comment": "x" * 5001, "csrf_token": token}
    assert client.post("/vote", data=too_long).status_code == 400
    assert store.votes() == []


def test_pages_escape_text_and_hide_identities(cx, study):
    store, tokens, pairs = study
    client = TestClient(create_app(store))
    page = sign_in(client, tokens["alice"])
    pages = []
    while 'section class="dialogue' in page.text:
        pages.append(page.text)
        stored, _ = shown(store, page.text, "alice")
        form = {
            "pair": stored.public_id,
            "choice": "tie",
            "comment": "alice-secret-note",
            "csrf_token": csrf_of(page.text),
        }
        page = client.post("/vote", data=form)
    assert len(pages) == 3 and "All pairs done" in page.text
    hostile = next(p for p in pages if "window.__pwned" in p)
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in hostile
    assert "&lt;img src=x onerror=&#34;window.__pwned=2&#34;&gt;" in hostile
    assert "<script" not in hostile and "<b>" not in hostile and "<img" not in hostile
    secrets = [cx.TUTOR_A, cx.TUTOR_B, *(p.pair_id for p in pairs), *(p.item_id for p in pairs)]
    secrets += [f"{p.score_a:.1f}" for p in pairs if p.score_a % 1]  # scores are never shown
    bob = TestClient(create_app(store))
    bob_page = sign_in(bob, tokens["bob"])
    for html in [*pages, page.text, bob_page.text]:
        assert not [s for s in secrets if s.lower() in html.lower()]
    assert "alice-secret-note" not in bob_page.text and 'data-done="0"' in bob_page.text  # no one else's votes


def test_security_headers_and_cookie(study):
    store, _, _ = study
    response = TestClient(create_app(store)).get("/login")
    assert "script-src" not in response.headers["content-security-policy"]  # default-src 'none' forbids scripts
    assert "default-src 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY" and response.headers["referrer-policy"] == "no-referrer"
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "secure" not in cookie
    secure = TestClient(create_app(store, secure_cookies=True), base_url="https://testserver").get("/login")
    assert "secure" in secure.headers["set-cookie"].lower()


def test_serve_binds_loopback_by_default():
    args = build_parser().parse_args(["compare", "serve"])
    assert args.host == "127.0.0.1" and args.db_url == "sqlite:///compare.db"


@pytest.mark.parametrize(("host", "loopback", "url"), [
    ("127.0.0.1", True, "http://127.0.0.1:8/"), ("127.0.0.2", True, "http://127.0.0.2:8/"),
    ("localhost", True, "http://localhost:8/"), ("::1", True, "http://[::1]:8/"), ("[::1]", True, "http://[::1]:8/"),
    ("0.0.0.0", False, "http://0.0.0.0:8/"), ("::", False, "http://[::]:8/"),
    ("192.168.1.5", False, "http://192.168.1.5:8/"),
    ("no-such-host.invalid", False, "http://no-such-host.invalid:8/"),
])
def test_the_exposure_warning_follows_the_address_and_ipv6_urls_are_bracketed(host, loopback, url):
    # a name is judged by what it resolves to ("localhost"); one that resolves to nothing is not this machine
    assert is_loopback(host) is loopback and http_url(host, 8) == url


def test_serve_on_ipv6_loopback_announces_a_url_and_warns_of_nothing(study, tmp_path, capsys, monkeypatch):
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: None)  # the announcement is under test, not uvicorn
    db = f"sqlite:///{tmp_path / 'study.db'}"
    assert main(["compare", "serve", "--db-url", db, "--host", "[::1]", "--port", "0"]) == 0
    out, err = capsys.readouterr()
    assert "warning" not in err and re.search(r"on http://\[::1\]:\d+/ ", out), (out, err)


def test_serve_needs_pairs(tmp_path, capsys):
    assert main(["compare", "serve", "--db-url", f"sqlite:///{tmp_path / 'empty.db'}"]) == 2
    assert "the study holds no pairs; pass --pairs FILE" in capsys.readouterr().err


def test_add_annotator_prints_links_and_report_needs_votes(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 's.db'}"
    assert main(["compare", "add-annotator", "t1", "t2", "--db-url", db, "--base-url", "http://h:9/"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["t1", "t2"]
    token = lines[0].split("\t")[1].removeprefix("http://h:9/login?token=")
    assert Store(db).annotator_for_token(token).name == "t1"
    assert main(["compare", "report", "--db-url", db]) == 2
    assert "error: the study holds no votes yet" in capsys.readouterr().err


def replay(store, cookies):
    """Another client holding a copy of ``cookies`` (an old session cookie someone kept)."""
    return TestClient(create_app(store), cookies=dict(cookies))


def assert_revoked(store, old, page):
    """A kept session cookie votes nothing: the vote is refused to the sign-in page and nothing is stored."""
    stored, _ = shown(store, page.text, "alice")
    form = {"pair": stored.public_id, "choice": "A", "csrf_token": csrf_of(page.text)}
    response = old.post("/vote", data=form, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/login")
    assert store.votes() == []
    assert "Your session has ended" in old.get("/login").text
    assert old.get("/compare", follow_redirects=False).headers["location"] == "/login"


def test_sign_out_ends_every_session_of_the_annotator(study):
    store, tokens, _ = study
    client, other_browser = TestClient(create_app(store)), TestClient(create_app(store))
    page = sign_in(client, tokens["alice"])
    sign_in(other_browser, tokens["alice"])
    kept = replay(store, client.cookies)
    assert client.post("/logout", data={"csrf_token": csrf_of(page.text)}).url.path == "/login"
    assert_revoked(store, kept, page)
    assert other_browser.get("/compare", follow_redirects=False).headers["location"] == "/login"
    again = sign_in(client, tokens["alice"])  # the access code still works; only the sessions ended
    vote = {"pair": shown(store, again.text, "alice")[0].public_id, "choice": "B", "csrf_token": csrf_of(again.text)}
    assert client.post("/vote", data=vote).status_code == 200 and len(store.votes()) == 1


def test_reissued_access_code_ends_open_sessions(study, capsys):
    store, tokens, _ = study
    client, bob = TestClient(create_app(store)), TestClient(create_app(store))
    page = sign_in(client, tokens["alice"])
    sign_in(bob, tokens["bob"])
    assert main(["compare", "add-annotator", "alice", "--reissue", "--db-url", str(store.engine.url)]) == 0
    fresh = capsys.readouterr().out.split("token=")[1].strip()
    assert_revoked(store, client, page)
    assert bob.get("/compare", follow_redirects=False).status_code == 200  # other annotators stay signed in
    sign_in(client, fresh)
    restarted = replay(Store(str(store.engine.url)), client.cookies)  # the generation is kept in the database
    assert restarted.get("/compare", follow_redirects=False).status_code == 200


OLD_ANNOTATORS_DDL = """CREATE TABLE compare_annotators (
    id INTEGER NOT NULL, name VARCHAR(200) NOT NULL, slot INTEGER NOT NULL, token_hash VARCHAR(64) NOT NULL,
    created_at DATETIME NOT NULL, PRIMARY KEY (id), UNIQUE (name), UNIQUE (slot), UNIQUE (token_hash))"""


def test_database_of_the_previous_schema_is_migrated(hostile_run, tmp_path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:  # a study created before sessions could be revoked
        conn.execute(OLD_ANNOTATORS_DDL)
        conn.execute(
            "INSERT INTO compare_annotators (name, slot, token_hash, created_at) VALUES (?, 0, ?, ?)",
            ("alice", hash_token("old-code"), "2025-01-01 00:00:00.000000"),
        )
    pairs_file = tmp_path / "pairs.jsonl"
    assert main(["compare", "build-pairs", str(hostile_run), "--out", str(pairs_file)]) == 0
    store = Store(f"sqlite:///{db}")
    store.load_pairs(read_pairs(pairs_file))
    Store(f"sqlite:///{db}")  # opening it again migrates nothing twice
    with sqlite3.connect(db) as conn:
        assert "session_generation" in [row[1] for row in conn.execute("PRAGMA table_info(compare_annotators)")]
    bob_code = store.add_annotator("bob")
    client = TestClient(create_app(store))
    page = sign_in(client, "old-code")
    kept = replay(store, client.cookies)
    assert client.post("/logout", data={"csrf_token": csrf_of(page.text)}).url.path == "/login"
    assert_revoked(store, kept, page)
    bob = TestClient(create_app(store))
    page = sign_in(bob, bob_code)
    vote = {"pair": shown(store, page.text, "bob")[0].public_id, "choice": "tie", "csrf_token": csrf_of(page.text)}
    assert bob.post("/vote", data=vote).status_code == 200 and len(store.votes()) == 1


def test_serve_refuses_a_taken_port_and_an_unusable_host_in_one_line_before_serving(study, tmp_path, capsys):
    import socket

    db = f"sqlite:///{tmp_path / 'study.db'}"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["compare", "serve", "--db-url", db, "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert "serving" not in out  # it did not claim to serve first
    expected = (f"error: --port {port}: cannot listen on 127.0.0.1:{port} (Address already in use); another server "
                "may hold it: stop it or pick another --port.")
    assert err.strip().splitlines() == [expected]
    for host in ("\u202e", "no-such-host.invalid", ""):
        assert main(["compare", "serve", "--db-url", db, "--host", host]) == 2
        out, err = capsys.readouterr()
        assert "serving" not in out and "Traceback" not in err
        # the one line: no warning that a host no one can reach would expose the study
        [line] = err.strip().splitlines()
        assert line.startswith("error: --host ") and "is no address to listen on" in line, err


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"])
def test_a_stop_signal_stops_the_study_server_with_one_line(study, tmp_path, signum):
    import signal
    import subprocess
    import sys
    import urllib.request

    db = f"sqlite:///{tmp_path / 'study.db'}"
    proc = subprocess.Popen([sys.executable, "-m", "pearl_verl.cli", "compare", "serve", "--db-url", db, "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
    deadline = time.monotonic() + 60
    while True:  # uvicorn starts serving a moment after the line
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
                assert response.status == 200
                break
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    proc.send_signal(signal.Signals[signum])  # Ctrl-C included, which the banner names: no uvicorn traceback
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.Signals[signum] and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == f"pearl-verl compare: stopped by {signum}", err
