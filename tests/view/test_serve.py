"""``view --serve`` over real HTTP: the page for GET and HEAD of two paths, nothing else, ever."""

import http.client
import os
import socket
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pearl_verl.view.view_cli import page_server

PAGE = b"<!DOCTYPE html><html><body>the page</body></html>"
SECRET = b"SECRET"


@pytest.fixture
def served(tmp_path):
    """The page served from a folder that also holds files (and a sub-folder) the network must never see."""
    site = tmp_path / "site"
    (site / "sub").mkdir(parents=True)
    page = site / "view.html"
    page.write_bytes(PAGE)
    (site / "secret.txt").write_bytes(SECRET + b" next to the page")
    (site / "sub" / "inner.txt").write_bytes(SECRET + b" in a sub-folder")
    (tmp_path / "secret.txt").write_bytes(SECRET + b" above the page")
    server = page_server(page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield page, server.server_address[1]
    server.shutdown()
    server.server_close()


def ask(port, method, target, headers=None):
    """(status, headers, body) of one request, the target sent exactly as given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, target, skip_host="Host" in (headers or {}), skip_accept_encoding=True)
        for key, value in (headers or {}).items():
            conn.putheader(key, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("target", ["/", "/view.html", "/?x=1", "/view.html?download=1&a=/../secret.txt"])
def test_get_and_head_of_the_page_answer_its_bytes(served, target):
    _, port = served
    status, headers, body = ask(port, "GET", target)
    assert (status, body) == (200, PAGE)
    assert headers["Content-Type"] == "text/html; charset=utf-8" and headers["Content-Length"] == str(len(PAGE))
    status, headers, body = ask(port, "HEAD", target)
    assert (status, body, headers["Content-Length"]) == (200, b"", str(len(PAGE)))


def test_head_of_the_root_sends_the_length_and_no_body(served):
    _, port = served
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"HEAD / HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200") and f"Content-Length: {len(PAGE)}".encode() in head
    assert body == b""  # no listing, no page: only the headers


@pytest.mark.parametrize("target", [
    "/secret.txt", "/sub/inner.txt", "/sub/", "/sub", "/../secret.txt", "//secret.txt", "/%2e%2e/secret.txt",
    "/%2E%2E%2Fsecret.txt", "/..%2fsecret.txt", "/%2e%2e%2f%2e%2e%2fsecret.txt", "/./view.html", "/%76iew.html",
    "/view%2Ehtml", "/..\\secret.txt", "/\\secret.txt", "/sub\\inner.txt", "/view.html/", "/view.html/../secret.txt",
    "/" + "../" * 3000 + "secret.txt", "/" + "a" * 20_000, "http://127.0.0.1/secret.txt", "secret.txt", "*",
])
def test_no_other_path_reaches_a_file(served, target):
    _, port = served
    for method in ("GET", "HEAD"):
        status, headers, body = ask(port, method, target)
        assert status == 404 or (target.startswith("http:") and status == 403), (method, target)  # 403: Host
        assert SECRET not in body and PAGE not in body
        assert headers.get("Content-Length") != str(len(SECRET + b" next to the page"))


def test_a_request_line_too_long_is_refused_without_a_file(served):
    _, port = served
    status, _, body = ask(port, "GET", "/" + "x" * 70_000)
    assert status == 414 and SECRET not in body and PAGE not in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "PROPFIND", "CONNECT"])
def test_other_methods_are_not_implemented(served, method):
    _, port = served
    for target in ("/", "/view.html", "/secret.txt"):
        status, _, body = ask(port, method, target)
        assert status in (405, 501), (method, target)
        assert SECRET not in body and PAGE not in body


def test_the_page_is_read_once_so_a_file_swapped_in_later_is_not_served(served):
    page, port = served
    page.unlink()
    page.symlink_to(page.parent / "secret.txt")
    status, _, body = ask(port, "GET", "/view.html")
    assert (status, body) == (200, PAGE)


def test_a_foreign_host_name_is_refused(served):
    _, port = served
    # a web page whose DNS name was rebound to 127.0.0.1 sends its own name as Host
    status, _, body = ask(port, "GET", "/", headers={"Host": f"attacker.example:{port}"})
    assert status == 403 and PAGE not in body
    assert ask(port, "GET", "/", headers={"Host": f"localhost:{port}"})[0] == 200
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)  # its own Host, then a second one
    conn.putrequest("GET", "/")
    conn.putheader("Host", "attacker.example")
    conn.endheaders()
    assert conn.getresponse().status == 403
    conn.close()


@settings(max_examples=400 if os.environ.get("PEARL_FUZZ") == "long" else 60, deadline=None, database=None,
          derandomize=os.environ.get("PEARL_FUZZ") != "long",
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "CONNECT", "PROPFIND"]),
       target=st.sampled_from(["/", "/view.html", "/secret.txt", "/sub/inner.txt", "/../secret.txt", "//secret.txt",
                               "/%2e%2e/secret.txt", "/sub", "/sub/"])
       | st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7e), max_size=60).map(lambda t: "/" + t))
def test_no_request_reaches_a_file_other_than_the_page(served, method, target):
    """Hypothesis: any method and printable target; only the page's bytes or an error ever come back."""
    _, port = served
    status, _, body = ask(port, method, target)
    assert SECRET not in body and b"Directory listing" not in body
    page_target = target.split("?", 1)[0] in ("/", "/view.html")
    if status == 200:
        assert page_target and method in ("GET", "HEAD") and body in (PAGE, b"")
    else:
        assert status in (400, 404, 405, 414, 501), (method, target, status)


def _start(argv):
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "pearl_verl.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"])
def test_a_stop_signal_stops_the_page_server_with_one_line_and_frees_its_port(run_folder, tmp_path, signum):
    import signal

    proc = _start(["view", str(run_folder), "-o", str(tmp_path / "view.html"), "--serve"])
    lines = [proc.stdout.readline(), proc.stdout.readline()]
    port = int(lines[-1].split("http://127.0.0.1:")[1].split("/")[0])
    assert ask(port, "GET", "/")[0] == 200
    proc.send_signal(signal.Signals[signum])
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.Signals[signum] and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == f"pearl-verl view: stopped by {signum}", err
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def test_a_taken_port_is_one_error_line_before_the_page_is_read(run_folder, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _start(["view", str(run_folder), "-o", str(tmp_path / "view.html"), "--serve", "--port", str(port)])
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and out == "" and not (tmp_path / "view.html").exists()
    assert err.strip().splitlines() == [f"error: --port {port}: cannot listen on 127.0.0.1:{port} (Address already in use); "
                                         "another server may hold it: stop it or pick another --port."]
