"""The study's database: pairs, annotators, votes and the study's secrets (SQLAlchemy Core).

Any SQLAlchemy URL works: ``sqlite:///compare.db`` (the default, one file) for a study on one
machine, ``postgresql+psycopg://user@host/db`` for a shared server. Every vote is committed in its
own transaction before the page answers, so a server killed mid-study loses nothing it confirmed.

Tables (all prefixed ``compare_``):

- ``settings``: ``session_secret`` (signs session cookies, so sessions survive a restart) and
  ``order_salt`` (draws the A/B orders and queues), generated on first use.
- ``pairs``: one row per :class:`~pearl_verl.compare.pairs.ComparisonPair`; ``public_id`` is a
  random id, the only one pages show; ``body`` holds the pair's JSON.
- ``annotators``: name, ``slot`` (0, 1, 2, ... in order of creation; sets the A/B order), the
  SHA-256 of the login token (the token itself is never stored) and ``session_generation``, which
  session cookies carry: advancing it (sign-out, a reissued token) ends every open session.
- ``votes``: one per (pair, annotator), unique; ``outcome`` and ``dims`` in real terms (``a``,
  ``b``, ``tie``), ``left_side`` the real side that was displayed as A.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import (
    Column,
    DateTime,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine, Row
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, OperationalError

from pearl_verl.compare.order import OUTCOMES, SIDES, queue_key
from pearl_verl.compare.pairs import ComparisonPair
from pearl_verl.compare.vote import Vote
from pearl_verl.dims import DIMENSIONS
from pearl_verl.errors import InputError

MAX_COMMENT_CHARS = 5000

metadata = MetaData()
settings_table = Table(
    "compare_settings",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)
pairs_table = Table(
    "compare_pairs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("public_id", String(32), unique=True, nullable=False),
    Column("pair_key", String(512), unique=True, nullable=False),
    Column("tutor_a", String(200), nullable=False),
    Column("tutor_b", String(200), nullable=False),
    Column("margin", String(16)),
    Column("digest", String(64), nullable=False),
    Column("body", Text, nullable=False),
)
annotators_table = Table(
    "compare_annotators",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), unique=True, nullable=False),
    Column("slot", Integer, unique=True, nullable=False),
    Column("token_hash", String(64), unique=True, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("session_generation", Integer, nullable=False, server_default="0"),
)
# Columns added after the first release: (table, column, SQL type and default). ``create_all`` never alters an
# existing table, so a database from an older version gets them on open.
ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("compare_annotators", "session_generation", "INTEGER NOT NULL DEFAULT 0"),
)
votes_table = Table(
    "compare_votes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("pair_id", ForeignKey("compare_pairs.id"), nullable=False),
    Column("annotator_id", ForeignKey("compare_annotators.id"), nullable=False),
    Column("outcome", String(3), nullable=False),
    Column("left_side", String(1), nullable=False),
    Column("dims", Text, nullable=False),
    Column("comment", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("pair_id", "annotator_id", name="one_vote_per_pair_and_annotator"),
)


class DuplicateVote(Exception):
    """The annotator already voted on this pair (the web app answers 409)."""


@dataclass(frozen=True)
class Annotator:
    """One identified annotator."""

    id: int
    name: str
    slot: int
    generation: int = 0  # the session generation: a session cookie from another generation is ended


@dataclass(frozen=True)
class StoredPair:
    """A pair as the study holds it: its database id, its public id and the pair."""

    id: int
    public_id: str
    pair: ComparisonPair


def hash_token(token: str) -> str:
    """The stored form of a login token (tokens are random, so a plain SHA-256 suffices)."""
    return hashlib.sha256(token.encode()).hexdigest()


def _digest(pair: ComparisonPair) -> str:
    return hashlib.sha256(json.dumps(pair.to_dict(), sort_keys=True).encode()).hexdigest()


def _annotator(row: Row) -> Annotator:
    return Annotator(row.id, row.name, row.slot, row.session_generation)


def _missing_columns(engine: Engine) -> list[tuple[str, str, str]]:
    """The :data:`ADDED_COLUMNS` the database lacks."""
    inspector = inspect(engine)
    return [added for added in ADDED_COLUMNS if added[1] not in {c["name"] for c in inspector.get_columns(added[0])}]


def add_missing_columns(engine: Engine) -> None:
    """Give a database created by an older version the columns added since (a no-op when up to date).

    Raises:
        DBAPIError: when a column cannot be added and is still missing.
    """
    for table, column, ddl in _missing_columns(engine):
        try:
            with engine.begin() as conn:
                conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}"))
        except DBAPIError:
            if (table, column, ddl) in _missing_columns(engine):
                raise
            # else another process starting on the same database added it first


class Store:
    """The study database.

    Args:
        url: a SQLAlchemy database URL; tables are created when missing.

    Raises:
        InputError: for a URL SQLAlchemy cannot use.
    """

    def __init__(self, url: str) -> None:
        try:
            self.engine: Engine = create_engine(url)
        except (ArgumentError, ImportError) as exc:
            raise InputError(
                f"database URL {url!r} cannot be used ({exc}); give e.g. sqlite:///compare.db or "
                "postgresql+psycopg://user@host/db (with its driver installed)."
            ) from exc
        try:
            metadata.create_all(self.engine)
            add_missing_columns(self.engine)
        except OperationalError as exc:
            raise InputError(f"cannot open the study database {url!r}: {exc.orig}") from exc
        self.session_secret = self._setting("session_secret")
        self.order_salt = self._setting("order_salt")

    def _setting(self, key: str) -> str:
        """The stored value of ``key``, created at random on first use (racing processes agree)."""
        with self.engine.begin() as conn:
            value = conn.scalar(select(settings_table.c.value).where(settings_table.c.key == key))
        if value is not None:
            return str(value)
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(settings_table).values(key=key, value=secrets.token_hex(32)))
        except IntegrityError:  # another process created it first: use theirs
            pass
        with self.engine.begin() as conn:
            return str(conn.scalar(select(settings_table.c.value).where(settings_table.c.key == key)))

    def load_pairs(self, pairs: Sequence[ComparisonPair]) -> int:
        """Add the pairs not yet in the study; returns how many were new.

        Raises:
            InputError: when a pair id is already in the study with other content (named).
        """
        new = 0
        with self.engine.begin() as conn:
            stored = dict(conn.execute(select(pairs_table.c.pair_key, pairs_table.c.digest)).all())
            for pair in pairs:
                digest = _digest(pair)
                if pair.pair_id in stored:
                    if stored[pair.pair_id] != digest:
                        raise InputError(
                            f"pair {pair.pair_id!r} is already in the study with other dialogues or scores; "
                            "votes refer to what was shown, so start a new database (--db-url) for new pairs."
                        )
                    continue
                conn.execute(
                    insert(pairs_table).values(
                        public_id=secrets.token_urlsafe(12),
                        pair_key=pair.pair_id,
                        tutor_a=pair.tutor_a,
                        tutor_b=pair.tutor_b,
                        margin=pair.margin,
                        digest=digest,
                        body=json.dumps(pair.to_dict(), ensure_ascii=False),
                    )
                )
                stored[pair.pair_id] = digest
                new += 1
        return new

    def add_annotator(self, name: str, reissue: bool = False) -> str:
        """Create an annotator (or, with ``reissue``, replace an existing one's token); returns the token.

        Raises:
            InputError: for an empty name, an existing name without ``reissue``, or an unknown one with it.
        """
        name = name.strip()
        if not name:
            raise InputError("an annotator needs a non-empty name.")
        token = secrets.token_urlsafe(24)
        with self.engine.begin() as conn:
            exists = conn.scalar(select(annotators_table.c.id).where(annotators_table.c.name == name))
            if reissue:
                if exists is None:
                    raise InputError(f"no annotator named {name!r} to reissue a token for.")
                # a new generation too: sessions signed in with the old token end with it
                conn.execute(
                    update(annotators_table)
                    .where(annotators_table.c.id == exists)
                    .values(token_hash=hash_token(token), session_generation=annotators_table.c.session_generation + 1)
                )
                return token
            if exists is not None:
                raise InputError(
                    f"annotator {name!r} exists; pass --reissue for a new link (the old one stops working)."
                )
        try:
            with self.engine.begin() as conn:
                slot = conn.scalar(select(func.count()).select_from(annotators_table))
                conn.execute(
                    insert(annotators_table).values(
                        name=name,
                        slot=int(slot or 0),
                        token_hash=hash_token(token),
                        created_at=dt.datetime.now(dt.timezone.utc),
                    )
                )
        except IntegrityError as exc:  # two annotators added at once took the same slot
            raise InputError(f"annotator {name!r} was added concurrently with another; run the command again.") from exc
        return token

    def annotators(self) -> list[Annotator]:
        with self.engine.begin() as conn:
            rows = conn.execute(select(annotators_table).order_by(annotators_table.c.slot)).all()
        return [_annotator(r) for r in rows]

    def annotator_for_token(self, token: str) -> Annotator | None:
        """The annotator a login token belongs to, or None."""
        with self.engine.begin() as conn:
            row = conn.execute(
                select(annotators_table).where(annotators_table.c.token_hash == hash_token(token.strip()))
            ).first()
        return None if row is None else _annotator(row)

    def annotator(self, annotator_id: int) -> Annotator | None:
        with self.engine.begin() as conn:
            row = conn.execute(select(annotators_table).where(annotators_table.c.id == annotator_id)).first()
        return None if row is None else _annotator(row)

    def end_sessions(self, annotator_id: int) -> None:
        """End every open session of the annotator (their cookies carry the generation this advances)."""
        with self.engine.begin() as conn:
            conn.execute(
                update(annotators_table)
                .where(annotators_table.c.id == annotator_id)
                .values(session_generation=annotators_table.c.session_generation + 1)
            )

    def progress(self, annotator: Annotator) -> tuple[int, int]:
        """(pairs this annotator voted on, pairs in the study)."""
        with self.engine.begin() as conn:
            total = conn.scalar(select(func.count()).select_from(pairs_table))
            done = conn.scalar(
                select(func.count()).select_from(votes_table).where(votes_table.c.annotator_id == annotator.id)
            )
        return int(done or 0), int(total or 0)

    def next_pair(self, annotator: Annotator) -> StoredPair | None:
        """The first pair of the annotator's queue they have not voted on, or None when all are done."""
        voted = select(votes_table.c.pair_id).where(votes_table.c.annotator_id == annotator.id)
        with self.engine.begin() as conn:
            open_pairs = conn.execute(
                select(pairs_table.c.id, pairs_table.c.public_id).where(pairs_table.c.id.not_in(voted))
            ).all()
        if not open_pairs:
            return None
        first = min(open_pairs, key=lambda r: queue_key(self.order_salt, r.public_id, annotator.slot))
        return self.pair(first.public_id)

    def pair(self, public_id: str) -> StoredPair | None:
        with self.engine.begin() as conn:
            row = conn.execute(select(pairs_table).where(pairs_table.c.public_id == public_id)).first()
        if row is None:
            return None
        return StoredPair(row.id, row.public_id, ComparisonPair.from_dict(json.loads(row.body)))

    def record_vote(
        self, annotator: Annotator, pair: StoredPair, outcome: str, left: str, dims: Mapping[str, str], comment: str
    ) -> None:
        """Commit one vote in real terms.

        Raises:
            InputError: for an outcome, side, dimension or dimension value outside the allowed ones, or a long
                comment.
            DuplicateVote: when the annotator already voted on the pair.
        """
        if outcome not in OUTCOMES or left not in SIDES or any(v not in OUTCOMES for v in dims.values()):
            raise InputError(f"vote {outcome!r} / left {left!r} / dims {dict(dims)} outside {list(OUTCOMES)}.")
        if set(dims) - set(DIMENSIONS):
            raise InputError(f"unknown dimension(s) {sorted(set(dims) - set(DIMENSIONS))}; use {list(DIMENSIONS)}.")
        if len(comment) > MAX_COMMENT_CHARS:
            raise InputError(f"comment of {len(comment)} characters exceeds {MAX_COMMENT_CHARS}.")
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(votes_table).values(
                        pair_id=pair.id,
                        annotator_id=annotator.id,
                        outcome=outcome,
                        left_side=left,
                        dims=json.dumps(dict(dims)),
                        comment=comment,
                        created_at=dt.datetime.now(dt.timezone.utc),
                    )
                )
        except IntegrityError as exc:
            raise DuplicateVote(f"{annotator.name} already voted on pair {pair.public_id}") from exc

    def pairs(self) -> list[ComparisonPair]:
        """Every pair of the study, in the order they were added."""
        with self.engine.begin() as conn:
            bodies = conn.scalars(select(pairs_table.c.body).order_by(pairs_table.c.id)).all()
        return [ComparisonPair.from_dict(json.loads(b)) for b in bodies]

    def votes(self) -> list[Vote]:
        """Every vote, ordered by pair and annotator slot."""
        query = (
            select(
                pairs_table.c.pair_key,
                pairs_table.c.tutor_a,
                pairs_table.c.tutor_b,
                pairs_table.c.margin,
                annotators_table.c.name,
                votes_table.c.outcome,
                votes_table.c.left_side,
                votes_table.c.dims,
                votes_table.c.comment,
            )
            .join(pairs_table, pairs_table.c.id == votes_table.c.pair_id)
            .join(annotators_table, annotators_table.c.id == votes_table.c.annotator_id)
            .order_by(pairs_table.c.id, annotators_table.c.slot)
        )
        with self.engine.begin() as conn:
            rows = conn.execute(query).all()
        return [Vote(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]), r[8]) for r in rows]
