"""The study database and the A/B order: persistence, one vote per pair, hashed tokens, counterbalancing."""

import sqlite3

import pytest

from pearl_verl.cli import main
from pearl_verl.compare.order import left_side, queue_key, to_real
from pearl_verl.compare.pairs import read_pairs
from pearl_verl.compare.store import DuplicateVote, Store


@pytest.fixture
def study(eval_run, tmp_path):
    pairs_file = tmp_path / "pairs.jsonl"
    assert main(["compare", "build-pairs", str(eval_run), "--out", str(pairs_file)]) == 0
    db = tmp_path / "study.db"
    store = Store(f"sqlite:///{db}")
    assert store.load_pairs(read_pairs(pairs_file)) == 3
    return store, db, read_pairs(pairs_file)


def test_loading_is_idempotent_and_rejects_changed_pairs(study):
    store, _, pairs = study
    assert store.load_pairs(pairs) == 0 and [p.pair_id for p in store.pairs()] == [p.pair_id for p in pairs]
    changed = pairs[0].__class__(**{**pairs[0].__dict__, "score_a": 1.0})
    with pytest.raises(ValueError, match=rf"pair '{pairs[0].pair_id}' is already in the study with other dialogues"):
        store.load_pairs([changed])


def test_tokens_are_stored_hashed_and_can_be_reissued(study):
    store, db, _ = study
    token = store.add_annotator("alice")
    assert store.annotator_for_token(token).name == "alice"
    assert store.annotator_for_token("not-a-token") is None
    with sqlite3.connect(db) as conn:
        dump = "\n".join(conn.iterdump())
    assert token not in dump
    with pytest.raises(ValueError, match="annotator 'alice' exists; pass --reissue"):
        store.add_annotator("alice")
    assert store.annotator_for_token(token).generation == 0
    fresh = store.add_annotator("alice", reissue=True)
    assert store.annotator_for_token(token) is None and store.annotator_for_token(fresh).name == "alice"
    assert store.annotator_for_token(fresh).generation == 1  # sessions of the old token end with it
    store.end_sessions(store.annotator_for_token(fresh).id)
    assert Store(f"sqlite:///{db}").annotator_for_token(fresh).generation == 2  # kept across restarts
    with pytest.raises(ValueError, match="no annotator named 'bob'"):
        store.add_annotator("bob", reissue=True)
    assert [a.slot for a in (store.annotators())] == [0]


def test_votes_persist_one_per_pair_and_queue_skips_voted(study):
    store, db, _ = study
    alice = store.annotator_for_token(store.add_annotator("alice"))
    seen = []
    while (stored := store.next_pair(alice)) is not None:
        assert stored.public_id not in seen  # each pair at most once
        seen.append(stored.public_id)
        store.record_vote(alice, stored, "tie", "a", {"leak": "b"}, "ok")
        with pytest.raises(DuplicateVote):
            store.record_vote(alice, stored, "a", "a", {}, "")
    assert len(seen) == 3 and store.progress(alice) == (3, 3)
    reopened = Store(f"sqlite:///{db}")  # a restarted server
    assert reopened.session_secret == store.session_secret and reopened.order_salt == store.order_salt
    votes = reopened.votes()
    assert len(votes) == 3 and {v.outcome for v in votes} == {"tie"} and votes[0].dims == {"leak": "b"}
    with pytest.raises(ValueError, match="outside"):
        store.record_vote(alice, store.pair(seen[0]), "A", "a", {}, "")
    with pytest.raises(ValueError, match=r"unknown dimension\(s\) \['clarity'\]"):
        store.record_vote(alice, store.pair(seen[0]), "a", "a", {"clarity": "a"}, "")


def test_bad_database_url_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="database URL 'nonsense' cannot be used"):
        Store("nonsense")
    with pytest.raises(ValueError, match="cannot open the study database"):
        Store(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")


def test_order_is_counterbalanced_and_balanced():
    ids = [f"pair{i}" for i in range(400)]
    for slot in range(4):
        lefts = [left_side("salt", i, slot) for i in ids]
        assert 160 < lefts.count("a") < 240  # random per pair: neither tutor mostly on the left
        other = [left_side("salt", i, slot + 1) for i in ids]
        assert all(x != y for x, y in zip(lefts, other))  # neighbouring slots: opposite orders
        assert lefts == [left_side("salt", i, slot) for i in ids]  # deterministic (restarts)
    assert [left_side("salt", i, 0) for i in ids] != [left_side("pepper", i, 0) for i in ids]
    first = sorted(ids, key=lambda i: queue_key("salt", i, 0))
    second = sorted(ids, key=lambda i: queue_key("salt", i, 1))
    assert first != second and sorted(first) == sorted(second)


def test_displayed_choice_maps_to_the_real_side():
    assert [to_real(c, "a") for c in ("A", "tie", "B")] == ["a", "tie", "b"]
    assert [to_real(c, "b") for c in ("A", "tie", "B")] == ["b", "tie", "a"]
    with pytest.raises(ValueError, match="choice 'left' must be one of"):
        to_real("left", "a")
