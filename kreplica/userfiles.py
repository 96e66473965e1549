"""Files a user names on the command line (snapshot, plan, command config, clusters.toml).

One wording for every way reading one fails: a missing file is a usage error naming the fix,
an unreadable one (a directory, no permission, not UTF-8) or broken JSON is bad input.
Pure (standard library only): the snapshot format, in the pure core, reads through it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kreplica.errors import InputError, UsageError


def read_user_file(path: Path, what: str, *, fix: str) -> str:
    """The text of `path`; `what` names the file in messages ("snapshot file"), `fix` says
    what to do when it does not exist ("check the path")."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{what} {str(path)!r} not found; {fix}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what} {str(path)!r}: {exc}") from None


def decode_json(text: str, origin: str, *, fix: str) -> Any:
    """`text` parsed as JSON; `origin` names it in the message, `fix` says how to repair it.

    orjson parses it when installed (a million-partition snapshot: ~1 s instead of ~4 s;
    imported here, at the first call, so the pure modules load nothing outside the standard
    library). Whatever orjson refuses goes to the standard decoder, so what is accepted and
    every message stay exactly the standard decoder's (it also takes NaN and lone
    surrogates, which orjson does not)."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - a dependency; only a broken install lacks it
        pass
    else:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{origin} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); " + fix
        ) from None
    except RecursionError:  # the decoder recurses per nesting level
        raise InputError(f"{origin} is nested too deeply to be read as JSON; " + fix) from None
