"""A key taken from the environment is redacted in the forms a server echoes it in, and a key too short to
redact is refused before the first request."""

import json
from urllib.parse import quote, quote_plus

import pytest

from pearl_verl.errors import InputError
from pearl_verl.llm.client import api_key
from pearl_verl.redact import PLACEHOLDER, redact, remember_secret

KEY = "Zx9/Qw3+Lm 7\"Tk&Rv=Pq"


@pytest.mark.parametrize("echo", [
    KEY,
    quote(KEY, safe=""),  # a query string: /, +, space, " and & encoded
    quote(KEY),  # a path: / kept
    quote_plus(KEY, safe=""),  # a form body: a space as +
    json.dumps(KEY)[1:-1],  # a JSON string
    json.dumps(KEY)[1:-1].replace("/", "\\/"),  # a JSON string with / escaped, as PHP writes it
], ids=["as given", "url-encoded", "url path", "form-encoded", "json", "json with \\/"])
def test_every_form_a_server_echoes_is_redacted(echo):
    remember_secret(KEY)
    said = redact(f'401: {{"error": "invalid key {echo}"}} in ?api_key={echo}&x=1')
    assert said.count(PLACEHOLDER) == 2 and "Zx9" not in said and "Rv" not in said


@pytest.mark.parametrize("wrap", ["\n", "\r\n  ", "  \n> ", "\\n", "\\r\\n"],
                         ids=["newline", "crlf and indent", "quoted", "json newline", "json crlf"])
def test_a_key_split_across_lines_is_redacted_in_every_form(wrap):
    remember_secret(KEY)
    for form in (KEY, quote(KEY, safe=""), json.dumps(KEY)[1:-1]):
        for cut in (1, len(form) // 2, len(form) - 1):
            said = redact(f"500: bad key {form[:cut]}{wrap}{form[cut:]} given")
            assert said == f"500: bad key {PLACEHOLDER} given", (form, cut)
    # a line break alone joins nothing: the words around it stay
    assert redact("Zx9/Qw\nsomething else") == "Zx9/Qw\nsomething else"


def test_a_key_too_short_to_redact_is_refused_naming_the_variable_not_the_value(monkeypatch):
    monkeypatch.setenv("PEARL_TEST_SHORT_KEY", "abc123")
    with pytest.raises(InputError) as refused:
        api_key("PEARL_TEST_SHORT_KEY")
    message = str(refused.value)
    assert "PEARL_TEST_SHORT_KEY is 6 characters long" in message and "abc123" not in message
    monkeypatch.setenv("PEARL_TEST_SHORT_KEY", "abcd1234")
    assert api_key("PEARL_TEST_SHORT_KEY") == "abcd1234" and redact("echo abcd1234") == f"echo {PLACEHOLDER}"


def test_doctor_cluster_remembers_the_key_before_the_server_lists_its_models(monkeypatch):
    import asyncio

    from pearl_verl.llm.local_server import LocalChatServer
    from pearl_verl.redact import redact_remembered
    from pearl_verl.verl_plugin.cluster_checks import _served_models

    key = "Hv4kQ9zX2mLp7Rt3Wn8Y"
    monkeypatch.setenv("PEARL_TEST_LISTED_KEY", key)
    with LocalChatServer(lambda body: "{}", model=key) as server:  # a server that lists the key as a model
        served = asyncio.run(_served_models(server.base_url, "PEARL_TEST_LISTED_KEY"))
    assert served == [key] and redact_remembered(f"served: {served}") == f"served: ['{PLACEHOLDER}']"
