"""Two outputs naming one path, or an output that is the command's own input, are refused before any work.

Both lost data once (exit 0): ``simulate --out s.json --summary s.json`` wrote the summary over the per-turn
JSONL, and ``view s.jsonl -o s.jsonl`` wrote the HTML page over the dialogues it read.
"""

from pearl_verl import cli


def test_the_same_path_for_two_outputs_is_refused_with_one_line(tmp_path, capsys):
    same = tmp_path / "same.json"
    code = cli.main(["simulate", "gsm8k/test.jsonl", "--limit", "1", "--out", str(same), "--summary", str(same)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "--out and --summary name one path" in err[0] and str(same) in err[0]
    assert not same.exists()


def test_an_output_that_is_an_input_of_the_command_is_refused_and_left_as_it_was(tmp_path, capsys):
    dialogues = tmp_path / "s.jsonl"
    dialogues.write_text('{"x": 1}\n')
    code = cli.main(["view", str(dialogues), "-o", str(dialogues)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "-o/--output" in err[0] and "is also the command's input (paths)" in err[0]
    assert dialogues.read_text() == '{"x": 1}\n'


def test_the_same_folder_through_another_spelling_is_the_same_path(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dialogues = tmp_path / "s.jsonl"
    dialogues.write_text("{}\n")
    assert cli.main(["view", str(dialogues), "-o", "./sub/../s.jsonl"]) == 2
    assert "is also the command's input" in capsys.readouterr().err


def test_distinct_outputs_and_inputs_pass_the_check(tmp_path, capsys):
    dialogues = tmp_path / "s.jsonl"
    dialogues.write_text("{}\n")
    cli.main(["view", str(dialogues), "-o", str(tmp_path / "page.html")])  # view's own verdict on the file
    err = capsys.readouterr().err
    assert "name one path" not in err and "is also the command's input" not in err
