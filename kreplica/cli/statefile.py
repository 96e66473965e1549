"""kreplica's own JSON records in its state folder (cli/common.py's `state_folder`): read
whole, written whole and atomically (a reader never sees half a file)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kreplica.cli.common import state_folder
from kreplica.errors import InputError


def record_path(name: str) -> Path:
    return state_folder() / name


def read_record(name: str, kind: str, what: str) -> dict[str, Any]:
    """The record `name` ({} when there is none yet): a JSON object whose `kind` key is 1. A
    file that is not one is a one-line error naming it (`what` it holds)."""
    path = record_path(name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc}); fix or delete it") from None
    if not isinstance(data, dict) or data.get(kind) != 1:
        raise InputError(f"{path} is not kreplica's record of {what}; fix or delete it")
    return data


def write_record(name: str, kind: str, data: dict[str, Any]) -> None:
    path = record_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({kind: 1, **data}, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
