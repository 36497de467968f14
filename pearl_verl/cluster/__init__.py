"""Cluster day one: the capacity plan (``pearl-verl plan``) and its model sizes."""
