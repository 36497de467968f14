"""Datasets into pearl_verl's records: problem sources, student-condition sampling, verl parquet."""
