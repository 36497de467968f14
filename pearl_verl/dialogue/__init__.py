"""What every component shares about one tutoring dialogue: the problem and its answer, the
episode record, the one episode loop (training, evaluation and data generation all run it), and the
verl parquet sample a dialogue starts from."""
