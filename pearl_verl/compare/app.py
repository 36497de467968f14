"""The comparison web app: sign in with an access code, compare two anonymous dialogues, vote.

Pages (server-rendered, no JavaScript):

- ``GET /login[?token=...]``, ``POST /login``: sign in with the annotator's access code; the
  invitation link fills it in.
- ``GET /compare``: the annotator's next pair not yet voted on (problem, reference solution,
  student profile, the two dialogues as "Dialogue A" and "Dialogue B"), or the done page.
- ``POST /vote``: the overall choice, optional per-dimension choices and a comment; committed
  before the answer. A second vote on the same pair gets 409.
- ``POST /logout``: ends every session of the annotator, ``GET /healthz``, ``GET /static/compare.css``.

Safety: every POST carries the session's CSRF token (403 without it); the session cookie is signed,
``HttpOnly`` and ``SameSite=Lax``, and holds the annotator's session generation, checked against the
database on every request, so sign-out and a reissued access code end it server-side; pages show
only public pair ids, never tutor names, pair ids, scores or anyone's votes; a strict
Content-Security-Policy forbids scripts, frames and foreign resources, and all text is autoescaped.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from jinja2 import DictLoader, Environment, StrictUndefined
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware.sessions import SessionMiddleware

from pearl_verl.compare.order import SHOWN, dims_to_real, left_side, to_real
from pearl_verl.compare.store import MAX_COMMENT_CHARS, Annotator, DuplicateVote, Store, StoredPair
from pearl_verl.compare.templates import CSS, TEMPLATES
from pearl_verl.dialogue.episode import STUDENT, TUTOR
from pearl_verl.dialogue.student_contract import ABILITY_LEVELS, TRAITS
from pearl_verl.dims import DIMENSIONS

SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",  # the login link carries the access code
    "Cache-Control": "no-store",  # shared school computers: no pages left in the cache
}
SESSION_COOKIE = "pearl_compare_session"
ROLE_LABELS: dict[str, str] = {STUDENT: "Student", TUTOR: "Tutor"}
DIM_CHOICES: tuple[tuple[str, str], ...] = (("A", "A"), ("tie", "tie"), ("B", "B"), ("", "no opinion"))


class Forbidden(HTTPException):
    """403 with a message for the page (bad CSRF token, bad access code, no session)."""

    def __init__(self, detail: str) -> None:
        super().__init__(403, detail)


router = APIRouter()
_ENV = Environment(loader=DictLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined)


def create_app(store: Store, secure_cookies: bool = False) -> FastAPI:
    """The app over ``store``.

    Args:
        store: the study database (pairs, annotators, votes, and the cookie-signing secret).
        secure_cookies: mark the session cookie ``Secure`` (set it when served over HTTPS).
    """
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store = store
    app.add_middleware(
        SessionMiddleware,
        secret_key=store.session_secret,
        session_cookie=SESSION_COOKIE,
        same_site="lax",
        https_only=secure_cookies,
    )
    app.middleware("http")(security_headers)
    app.exception_handler(HTTPException)(error_page)
    app.include_router(router)
    return app


async def security_headers(request: Request, call_next: Any) -> Response:
    """Add :data:`SECURITY_HEADERS` to every response."""
    response = await call_next(request)
    response.headers.update(SECURITY_HEADERS)
    return response


def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A rendered template (autoescaped) with the session's CSRF token."""
    context.setdefault("annotator", None)
    context.setdefault("progress", None)
    html = _ENV.get_template(name).render(csrf=csrf_token(request), **context)
    return HTMLResponse(html, status_code=status)


async def error_page(request: Request, exc: HTTPException) -> HTMLResponse:
    """Errors as a page with a way back (the status code is kept)."""
    heading = {403: "Not allowed", 404: "Not found", 409: "Already voted"}.get(exc.status_code, "Request refused")
    signed_in = "annotator" in request.session
    return page(
        request,
        "message.html",
        exc.status_code,
        heading=heading,
        message=str(exc.detail),
        next_url="/compare" if signed_in else "/login",
        next_label="Go to the next pair" if signed_in else "Sign in",
    )


def _store(request: Request) -> Store:
    return request.app.state.store


async def current(request: Request) -> Annotator | None:
    """The signed-in annotator, or None (an ended session is cleared, and the sign-in page says so).

    A signed cookie cannot be recalled once sent, so it is honoured only while the generation it
    carries is still the annotator's in the database.
    """
    annotator_id = request.session.get("annotator")
    if not isinstance(annotator_id, int):
        return None
    annotator = await run_in_threadpool(_store(request).annotator, annotator_id)
    # None: a session from another study database; another generation: signed out, or a reissued code
    if annotator is None or request.session.get("generation") != annotator.generation:
        request.session.clear()
        request.session["ended"] = True
        return None
    return annotator


@router.get("/healthz", response_class=PlainTextResponse)
def healthz() -> str:
    return "ok"


@router.get("/static/compare.css")
def stylesheet() -> Response:
    return Response(CSS, media_type="text/css")


@router.get("/")
async def home(request: Request) -> Response:
    return RedirectResponse("/compare" if await current(request) else "/login", 303)


@router.get("/login")
def login_page(request: Request, token: str = "") -> HTMLResponse:
    return page(request, "login.html", token=token, ended=bool(request.session.pop("ended", False)))


@router.post("/login")
async def login(request: Request) -> Response:
    form = await checked_form(request)
    annotator = await run_in_threadpool(_store(request).annotator_for_token, text(form, "token"))
    if annotator is None:
        raise Forbidden("This access code is not valid. Use the link or code your study organiser sent you.")
    request.session.clear()  # a fresh session (and CSRF token) per sign-in
    request.session["annotator"] = annotator.id
    request.session["generation"] = annotator.generation
    return RedirectResponse("/compare", 303)


@router.post("/logout")
async def logout(request: Request) -> Response:
    await checked_form(request)
    annotator = await current(request)
    if annotator is not None:
        # every session of the annotator, not only this cookie: a copy kept elsewhere (another browser,
        # a shared school computer) must stop working too, and only a per-annotator generation can say so
        await run_in_threadpool(_store(request).end_sessions, annotator.id)
    request.session.clear()
    return RedirectResponse("/login", 303)


@router.get("/compare")
async def compare(request: Request) -> Response:
    store = _store(request)
    annotator = await current(request)
    if annotator is None:
        return RedirectResponse("/login", 303)
    progress = await run_in_threadpool(store.progress, annotator)
    stored = await run_in_threadpool(store.next_pair, annotator)
    if stored is None:
        return page(request, "done.html", annotator=annotator, progress=progress)
    left = left_side(store.order_salt, stored.public_id, annotator.slot)
    return page(request, "compare.html", annotator=annotator, progress=progress, **pair_view(stored, left))


@router.post("/vote")
async def vote(request: Request) -> Response:
    store = _store(request)
    form = await checked_form(request)
    annotator = await current(request)
    if annotator is None:  # the vote is not stored; after signing in the same pair comes back
        return RedirectResponse("/login", 303)
    stored = await run_in_threadpool(store.pair, text(form, "pair"))
    if stored is None:
        raise HTTPException(404, "This pair is not part of the study.")
    choice = text(form, "choice")
    shown_dims = {dim: text(form, f"dim_{dim}") for dim in DIMENSIONS}
    if choice not in SHOWN or any(v and v not in SHOWN for v in shown_dims.values()):
        raise HTTPException(400, "Choose Dialogue A, Tie or Dialogue B (and A, Tie, B or no opinion per dimension).")
    comment = text(form, "comment").strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise HTTPException(400, f"The comment is longer than {MAX_COMMENT_CHARS} characters.")
    # the order is recomputed here, never taken from the form, so a vote cannot be mapped to the wrong tutor
    left = left_side(store.order_salt, stored.public_id, annotator.slot)
    real, dims = to_real(choice, left), dims_to_real(shown_dims, left)
    try:
        await run_in_threadpool(store.record_vote, annotator, stored, real, left, dims, comment)
    except DuplicateVote as exc:
        raise HTTPException(409, "You have already voted on this pair; each pair is compared once.") from exc
    return RedirectResponse("/compare", 303)


def csrf_token(request: Request) -> str:
    """The session's CSRF token, created on first use."""
    token = request.session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


async def checked_form(request: Request) -> Mapping[str, Any]:
    """The POSTed form, after checking its CSRF token against the session's.

    Raises:
        Forbidden: when the token is missing or differs (a forged cross-site POST, or an expired session).
    """
    form = await request.form()
    expected, given = request.session.get("csrf"), form.get("csrf_token")
    if not isinstance(expected, str) or not isinstance(given, str) or not hmac.compare_digest(expected, given):
        raise Forbidden("The form's security token is missing or out of date. Reload the page and try again.")
    return form


def text(form: Mapping[str, Any], key: str) -> str:
    """A form field as text ('' when absent or a file)."""
    value = form.get(key)
    return value if isinstance(value, str) else ""


def pair_view(stored: StoredPair, left: str) -> dict[str, Any]:
    """The template context of one pair, with the real side ``left`` shown as Dialogue A.

    Holds no tutor name, pair id, score or margin: only what teachers may see.
    """
    from pearl_verl.judge.rubric import DIMENSION_DEFINITIONS, DIMENSION_TITLES

    pair = stored.pair
    episodes = {"a": pair.a, "b": pair.b}
    right = "b" if left == "a" else "a"
    profile = pair.a.condition.profile
    sides = [
        {
            "position": position,
            "letter": letter,
            "turns": [{"role": t.role, "label": ROLE_LABELS[t.role], "text": t.text} for t in episodes[side].turns],
        }
        for position, letter, side in (("left", "A", left), ("right", "B", right))
    ]
    return {
        "pair_public_id": stored.public_id,
        "problem": pair.a.problem,
        "student": {
            "ability": profile.ability,
            "total": profile.total,
            "traits": [(trait, ABILITY_LEVELS[getattr(profile, trait) - 1]) for trait in TRAITS],
            "misconception": pair.a.condition.misconception,
        },
        "sides": sides,
        "dims": [{"key": d, "title": DIMENSION_TITLES[d], "definition": DIMENSION_DEFINITIONS[d]} for d in DIMENSIONS],
        "dim_choices": DIM_CHOICES,
        "max_comment": MAX_COMMENT_CHARS,
    }
