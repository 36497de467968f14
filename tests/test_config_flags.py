"""Flags generated from config dataclasses: types, defaults, choices, switches and help from the docstring."""

import argparse
import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import pytest

from pearl_verl.config_flags import add_config_flags, config_values, field_docs
from pearl_verl.judge.judge_config import JudgeConfig
from pearl_verl.train_local.local_config import LocalTrainConfig


@dataclass(frozen=True)
class _Base:
    """A base.

    Attributes:
        rate: a share, in % of the whole.
    """

    rate: float = 0.5


@dataclass(frozen=True)
class _Toy(_Base):
    """Toy settings.

    Attributes:
        steps: how many steps,
            over two lines.
        lr: learning rate; None picks one.
        mode: ``fast`` or ``slow``.
        verbose: say more.
        keep: keep things.
    """

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"mode": ("fast", "slow")}

    steps: int = 3
    lr: float | None = None
    mode: str = "fast"
    verbose: bool = False
    keep: bool = True


def _parser(cls=_Toy, **kwargs) -> tuple[argparse.ArgumentParser, tuple[str, ...]]:
    parser = argparse.ArgumentParser(prog="t", exit_on_error=False)
    parser.add_argument("paths", nargs="*")
    return parser, add_config_flags(parser, cls, **kwargs)


def test_flags_parse_each_type_and_build_the_config():
    parser, names = _parser()
    assert _Toy(**config_values(parser.parse_args([]), names)) == _Toy()
    args = parser.parse_args(["--steps", "7", "--lr", "1e-3", "--mode", "slow", "--verbose", "--no-keep", "--rate", "2"])
    assert _Toy(**config_values(args, names)) == _Toy(rate=2.0, steps=7, lr=1e-3, mode="slow", verbose=True, keep=False)


def test_a_switch_takes_no_value_so_a_positional_after_it_stays_positional():
    parser, names = _parser()
    args = parser.parse_args(["--verbose", "data.jsonl"])
    assert args.verbose is True and args.paths == ["data.jsonl"]


def test_choices_come_from_the_class_and_bad_values_fail_in_argparse():
    parser, _ = _parser()
    with pytest.raises(argparse.ArgumentError):
        parser.parse_args(["--mode", "medium"])
    with pytest.raises(argparse.ArgumentError):
        parser.parse_args(["--steps", "three"])


def test_help_is_the_docstring_entry_with_inherited_fields_and_defaults():
    parser, _ = _parser()
    text = " ".join(parser.format_help().split())
    assert "--steps STEPS how many steps, over two lines. (default: 3)" in text
    assert "--rate RATE a share, in % of the whole. (default: 0.5)" in text  # % escaped for argparse
    assert "--mode {fast,slow} fast or slow." in text  # rST literals unwrapped
    assert "--keep, --no-keep keep things." in text and "--out_dir" not in text


def test_prefix_subset_defaults_and_help_overrides():
    parser, names = _parser(JudgeConfig, names=("samples", "top_k", "aggregate"), prefix="judge-",
                            defaults={"samples": 3}, helps={"top_k": "top-k; 0 leaves the server default"})
    args = parser.parse_args(["--judge-top-k", "7", "--judge-aggregate", "median"])
    assert config_values(args, names, "judge-") == {"samples": 3, "top_k": 7, "aggregate": "median"}
    assert "0 leaves the server default" in parser.format_help()
    with pytest.raises(argparse.ArgumentError):  # JudgeConfig.CHOICES reached argparse
        parser.parse_args(["--judge-aggregate", "mode"])


def test_mistakes_in_the_declaration_fail_when_the_parser_is_built():
    with pytest.raises(ValueError, match=r"has no field \['stepz'\]"):
        _parser(names=("stepz",))

    @dataclass
    class Undocumented:
        """No attributes section."""

        n: int = 1

    with pytest.raises(ValueError, match="Undocumented.n has no entry"):
        _parser(Undocumented)


def test_every_train_local_setting_is_a_documented_flag():
    docs = field_docs(LocalTrainConfig)
    assert {f.name for f in dataclasses.fields(LocalTrainConfig)} <= set(docs)
    parser, names = _parser(LocalTrainConfig)
    args = parser.parse_args(["--max-tutor-turns", "9", "--rollout-dtype", "float32", "--cold-start-lr", "0.01"])
    config = LocalTrainConfig(**config_values(args, names))
    assert (config.max_tutor_turns, config.rollout_dtype, config.cold_start_lr, config.lr) == (9, "float32", 0.01, None)


def _says_something(default) -> bool:
    return default not in (None, argparse.SUPPRESS, []) and not isinstance(default, bool)


def test_every_flag_says_what_it_does_its_default_and_allowed_values_in_a_line_or_two():
    """Each flag of every command: a help text; its default where that says something (argparse's
    ``(default: ...)``, or the text's own); a number flag's range (``Allowed:``); and at most two sentences,
    the reason behind a default being the docs'."""
    from pearl_verl import cli
    from pearl_verl.ranges import Range

    for path, parser in cli.command_parsers(cli.build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            where = f"pearl-verl {' '.join(path)} {action.option_strings[-1]}"
            assert action.help, f"{where} has no help"
            text = formatter._expand_help(action)
            if _says_something(action.default):
                assert "default" in text, f"{where}: no default in {text!r}"
            if isinstance(getattr(action.type, "__self__", None), Range) or type(action.type).__name__ == "_NullAsZero":
                assert "Allowed: " in text, f"{where}: no allowed values in {text!r}"
            said = text.split("Allowed: ")[0].replace("e.g.", "eg")
            assert said.count(". ") <= 1 and len(text) <= 320, f"{where} says more than a line or two: {text!r}"
