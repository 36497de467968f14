"""``pearl-verl view``: one self-contained HTML page to read a run's dialogues with all that is known of each."""
