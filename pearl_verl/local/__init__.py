"""Single-machine pieces: offline tiny models and the local training loop (CPU or one GPU)."""
