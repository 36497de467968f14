"""Cold-start SFT data: a teacher tutors simulated students (``pearl-verl gen-sft``), filters, verl SFT parquet."""
