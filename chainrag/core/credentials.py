"""Credentials never reach a file: mask them by value, strip them from URLs.

A run can see credentials in two places: the environment (``OPENAI_API_KEY``,
``AWS_SECRET_ACCESS_KEY``, ``HF_TOKEN``, ``DB_PASSWORD``...) and the userinfo of a URL
(``https://user:pass@host/v1`` as a recipe's ``api_base``). :func:`redact` masks the value of
every credential-named environment variable, and every URL's userinfo, wherever it appears in a
text; :func:`strip_userinfo` gives a URL without its userinfo, for what is stored or keyed
(``run.json``, ``recipe.yaml``, the LLM cache key).
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping

MASK = "***"

CREDENTIAL_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|PRIVATE",
    re.IGNORECASE,
)
"""An environment variable whose name matches this anywhere holds a credential..."""

SETTING_NAME = re.compile(
    r"_(MODE|TYPE|KIND|PATH|FILE|DIR|SOCK|HOST|PORT|URL|LEVEL|VERSION|ENABLED?|DISABLED?)$",
    re.IGNORECASE,
)
"""...unless its name ends like a setting's (``RAY_AUTH_MODE=token``, ``SSH_AUTH_SOCK``):
masking ``token`` made every ``max_tokens`` in a run's files ``max_***s``."""

MIN_SECRET_CHARS = 4
"""Shorter values are not masked: masking ``"1"`` or ``"no"`` would mangle every text."""

_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")


def strip_userinfo(url: str) -> str:
    """``url`` without a ``user:password@`` part (``https://u:p@h/v1`` → ``https://h/v1``)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def credential_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of credential-named environment variables, longest first."""
    env = os.environ if environ is None else environ
    values = {
        v
        for k, v in env.items()
        if CREDENTIAL_NAME.search(k) and not SETTING_NAME.search(k) and len(v) >= MIN_SECRET_CHARS
    }
    return sorted(values, key=len, reverse=True)


def redact(text: str, extra: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every credential the process can see masked by value.

    Masks the values of credential-named environment variables (also in their JSON-escaped
    form, so a JSON text is masked too), the ``extra`` values, and any URL's userinfo.
    """
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    for value in [*credential_values(environ), *extra]:
        if len(value) < MIN_SECRET_CHARS:
            continue
        text = text.replace(value, MASK)
        escaped = _json_escaped(value)
        if escaped != value:
            text = text.replace(escaped, MASK)
    return text


def _json_escaped(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)[1:-1]
