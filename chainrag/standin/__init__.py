"""A stand-in for an OpenAI-compatible API on 127.0.0.1: answers chainrag's prompts
deterministically (:mod:`~chainrag.standin.replies`) with a provider's faults on demand (keys,
rate limits, bursts, latency, errors, a log of requests; :mod:`~chainrag.standin.server`), so
that a set-up (``chainrag standin``), a test or a benchmark runs a remote model's whole path
without paying or reaching the network.

Layer: beside :mod:`chainrag.llm`; imports only :mod:`chainrag.llm.preflight` (the probe it
answers apart).
"""
