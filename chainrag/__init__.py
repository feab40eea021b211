"""chainrag: multi-hop retrieval-augmented QA from small, typed, recipe-composed components."""

__version__ = "0.1.0"
