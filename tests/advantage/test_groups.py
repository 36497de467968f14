"""Group ids: one canonical key per uid, whatever else the batch holds; None, NaN and flags rejected;
the ``advantage`` command and the trainer's estimator group the same uids the same way."""

import json
import random

import numpy as np
import pytest
import torch

from pearl_verl.advantage.estimator import AdvantageConfig, group_ids, group_key
from pearl_verl.advantage.inputs import inputs_from_rows
from pearl_verl.cli import main
from pearl_verl.dims import DIMENSIONS

# One uid of each form, and the key each must get: the text of the uid.
FORMS = [
    (1, "1"), ("1", "1"), (np.int64(1), "1"), (torch.tensor(1), "1"), (np.str_("1"), "1"),
    (1.0, "1.0"), (np.float32(1.0), "1.0"), (1.5, "1.5"), (-3, "-3"),
    ("a", "a"), (np.str_("a"), "a"), ("uuid-4f0c", "uuid-4f0c"), ("", ""),
]  # fmt: skip


def _ids(index):
    group, count = group_ids(index)
    assert group.dtype == torch.int64 and count == len(set(group.tolist()))
    return group.tolist()


def _partition(keys):
    """Dense ids in order of first appearance: what grouping by ``keys`` must give."""
    first = {}
    return [first.setdefault(k, len(first)) for k in keys]


@pytest.mark.parametrize(("uid", "key"), FORMS)
def test_each_form_has_one_key(uid, key):
    assert group_key(uid) == key


def test_the_issue_example_no_longer_depends_on_the_batch():
    assert _ids([1, "1", 1.0]) == [0, 0, 1]
    assert _ids([1, "1", 1.0, "b", "b"]) == [0, 0, 1, 2, 2]
    assert _ids([1, 1.0]) == [0, 1]  # a list of numbers is not coerced to floats as one numpy array
    assert _ids([1, 1.0, "x"]) == [0, 1, 2]  # ... nor to strings when a string joins it
    with pytest.raises(ValueError, match=r"index\[3\]"):
        _ids([1, "1", 1.0, True])
    with pytest.raises(ValueError, match=r"index\[3\]"):
        _ids([1, "1", 1.0, None, None])


def test_grouping_is_invariant_to_order_and_to_other_uids():
    rng = random.Random(0)
    pool = [uid for uid, _ in FORMS if not isinstance(uid, torch.Tensor)]
    uids = [rng.choice(pool) for _ in range(200)]
    keys = [group_key(u) for u in uids]
    for container in (list, lambda u: np.array(u, dtype=object)):
        assert _ids(container(uids)) == _partition(keys)
        order = list(range(len(uids)))
        rng.shuffle(order)
        assert _ids(container([uids[i] for i in order])) == _partition([keys[i] for i in order])
        extra = ["new", 7, 2.5, np.int64(9)]
        assert _ids(container(uids + extra))[: len(uids)] == _partition(keys)
        for bad in (None, float("nan"), True):
            with pytest.raises(ValueError, match=rf"index\[{len(uids)}\]"):
                _ids(container(uids + [bad]))


@pytest.mark.parametrize(
    "index",
    [
        ["a", "b", 1],
        np.array(["a", "b", "1"]),
        np.array([5, 6, 1]),
        np.array([5, 6, 1], dtype=np.uint8),
        torch.tensor([5, 6, 1]),
        np.array([0.5, 2.0, 1.0]),
        torch.tensor([0.5, 2.0, 1.0], dtype=torch.float64),
        np.array(["a", np.int64(4), 1.0], dtype=object),
    ],
)
def test_arrays_and_tensors_group_by_the_same_keys_as_their_elements(index):
    elements = index.tolist() if isinstance(index, torch.Tensor | np.ndarray) else index
    assert _ids(index) == _partition([group_key(u) for u in elements])
    assert _ids(index) == _ids(list(elements))  # the container does not matter


@pytest.mark.parametrize(
    ("index", "row", "what"),
    [
        (["a", "a", None], 2, "None"),
        (np.array(["a", None, "b"], dtype=object), 1, "None"),
        (["a", float("nan")], 1, "NaN"),
        (["a", "b", np.nan], 2, "NaN"),
        (np.array([0.5, np.nan, 1.0]), 1, "NaN"),
        (np.array(["a", np.float64("nan")], dtype=object), 1, "NaN"),
        (torch.tensor([1.0, 2.0, float("nan")]), 2, "NaN"),
        (["a", True], 1, "boolean"),
        (np.array([False, True]), 0, "boolean"),
        (torch.tensor([True, False]), 0, "boolean"),
        (["a", "b", np.bool_(False)], 2, "boolean"),
        (["a", ["b"], "c"], 1, "list"),
        (["a", {"b": 1}], 1, "dict"),
        (["a", b"b"], 1, "bytes"),
    ],
)
def test_none_nan_flags_and_containers_are_rejected_naming_the_row(index, row, what):
    with pytest.raises(ValueError, match=rf"^index\[{row}\] .*{what}"):
        group_ids(index)


def test_the_estimator_rejects_a_none_uid_naming_the_row():
    from pearl_verl.advantage.estimator import compute_pearl_advantage

    with pytest.raises(ValueError, match=r"^index\[1\] is None"):
        compute_pearl_advantage(torch.tensor([[0.5], [0.7]]), [1, 1], [True, True], np.array(["q", None], dtype=object))


# uids the old code grouped three ways: str() in the command, hash equality (1 == 1.0) in the
# estimator, and numpy's coercion of the whole batch to one dtype.
_UIDS = [1, "1", 1, 1.0, 1.0, "g", "g", 2, "2", 2.0]
_SCORES = [0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.6, 0.4, 0.0]


def _judged_file(tmp_path, uids):
    path = tmp_path / "judged.jsonl"
    rows = [
        {"uid": uid, **{d: score for d in DIMENSIONS}, "judge_ok": 1, "completed": 1, "tutor_turns": 2 + i % 3}
        for i, (uid, score) in enumerate(zip(uids, _SCORES))
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path, rows


def test_the_advantage_command_groups_as_the_trainers_estimator(tmp_path, capsys):
    from pearl_verl.verl_plugin.adv_estimator import compute_pearl_outcome_advantage

    path, rows = _judged_file(tmp_path, _UIDS)
    assert main(["advantage", str(path), "--json"]) == 0
    command = [row["advantage"] for row in map(json.loads, capsys.readouterr().out.splitlines())]
    config = AdvantageConfig()
    estimator, _ = compute_pearl_outcome_advantage(
        torch.zeros(len(rows), 3), torch.ones(len(rows), 3), index=np.array(_UIDS, dtype=object),
        pearl_inputs=inputs_from_rows(rows, config), pearl_config=config,
    )  # fmt: skip
    assert command == pytest.approx(estimator[:, 0].tolist(), abs=1e-5)
    assert main(["advantage", str(path)]) == 0
    headers = [line for line in capsys.readouterr().out.splitlines() if line.startswith("group ")]
    assert headers == [
        "group 1 (3 dialogues)", "group 1.0 (2 dialogues)", "group g (2 dialogues)",
        "group 2 (2 dialogues)", "group 2.0 (1 dialogues)",
    ]  # fmt: skip


@pytest.mark.parametrize(("uid", "what"), [(None, "None"), (float("nan"), "NaN"), (True, "boolean")])
def test_the_advantage_command_names_the_line_of_a_rejected_uid(tmp_path, capsys, uid, what):
    path, _ = _judged_file(tmp_path, ["a", "a", uid, "b"])
    assert main(["advantage", str(path)]) == 2
    (err,) = capsys.readouterr().err.splitlines()
    assert err.startswith(f"error: {path}:3: uid ") and what in err
