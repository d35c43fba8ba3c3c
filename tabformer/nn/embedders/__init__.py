"""Embedders: the torch half of each tokenizer, ``forward(**batch) -> (tokens (B, T, D), mask (B, T) or None)``."""
