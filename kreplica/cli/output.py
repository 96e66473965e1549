"""Run state, the JSON envelope, and turning errors into one line plus an exit code."""

from __future__ import annotations

import json
import re
import sys
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import IO, Any

from kreplica.errors import ExitCode, KreplicaError, flag_words

ENVELOPE_VERSION = 1
OUTPUT_FORMATS = ("table", "json", "markdown")


@dataclass
class RunState:
    """What the error handler must know about the current invocation. Filled from a quick scan of
    argv before parsing (so even a usage error knows `--output json`) and then by the command."""

    command: str = ""
    output: str = "table"
    debug: bool = False
    no_color: bool = False
    envelope_sent: bool = False
    # option (kreplica.errors.FLAGS) -> where it was really set (a --cluster entry, a variable), for
    # error messages
    flag_names: dict[str, str] = field(default_factory=dict)
    # what Ctrl-C leaves behind, set by a command once it starts changing the cluster
    interrupt_note: str = ""

    def begin(self, command: str, *, output: str, debug: bool, no_color: bool) -> None:
        """The command typer parsed: its name and the output flags it was given."""
        self.command = command
        self.output = output
        self.debug = self.debug or debug
        self.no_color = self.no_color or no_color


# The invocation under way: set by `running` for one command line, so nothing of one run is
# left for the next (tests run many in one process). Outside a run, a blank state.
_CURRENT: ContextVar[RunState | None] = ContextVar("kreplica_run_state", default=None)


def state() -> RunState:
    """The current invocation's state (a throwaway blank one outside `running`)."""
    return _CURRENT.get() or RunState()


def new_state(args: list[str], env: Mapping[str, str]) -> RunState:
    """A fresh invocation's state, from a quick scan of its arguments and environment."""
    return RunState(
        command=_first_word(args),
        output=_scan_output(args, env.get("KREPLICA_OUTPUT", "table")),
        debug="--debug" in args or env.get("KREPLICA_DEBUG", "") not in ("", "0"),
        no_color="--no-color" in args,
    )


@contextmanager
def running(run: RunState) -> Iterator[RunState]:
    """`run` is the current state inside the block, and no longer after it."""
    token = _CURRENT.set(run)
    try:
        yield run
    finally:
        _CURRENT.reset(token)


def _first_word(args: list[str]) -> str:
    words = [a for a in args if not a.startswith("-")]
    if not words:
        return ""
    if words[0] == "sandbox" and len(words) > 1:
        return f"sandbox {words[1]}"
    return words[0]


def _scan_output(args: list[str], default: str) -> str:
    value = default
    for i, arg in enumerate(args):
        if arg == "--output" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--output="):
            value = arg.split("=", 1)[1]
    return value if value in OUTPUT_FORMATS else "table"


def envelope(
    command: str, data: Any, errors: list[dict[str, str]] | None = None, *, status: str = ""
) -> dict[str, Any]:
    errors = errors or []
    return {
        "kreplica": ENVELOPE_VERSION,
        "command": command,
        "status": status or ("error" if errors else "ok"),
        "data": data,
        "errors": errors,
    }


# Partition lists of an array plan (planner/serialize_arrays.py LazyEntries) are written from
# the arrays as the output goes: the document is encoded with a marker string in their place,
# and the list's pieces are written where the marker is. Only dict values are looked at.
_MARK = "@@kreplica-lazy-%d@@"
_MARK_RE = re.compile(rb'"@@kreplica-lazy-(\d+)@@"')


def _is_lazy(value: Any) -> bool:
    return hasattr(value, "chunks") and hasattr(value, "changes")


def _swap_lazy(document: Any, found: list[Any], *, whole: bool) -> Any:
    """`document` with each lazy list replaced by a marker (appended to `found`), or by
    the list of dicts it stands for (`whole`: a layout the pieces do not write)."""
    if _is_lazy(document):
        if whole:
            return document.as_dicts()
        found.append(document)
        return _MARK % (len(found) - 1)
    if isinstance(document, dict):
        return {k: _swap_lazy(v, found, whole=whole) for k, v in document.items()}
    return document


def _pieces(encoded: bytes, found: list[Any], *, indented: bool) -> Iterator[bytes]:
    """`encoded` with each marker replaced by its list's text, piece by piece."""
    parts = _MARK_RE.split(encoded)
    for i, part in enumerate(parts):
        if i % 2 == 0:
            yield part
            continue
        indent = None
        if indented:  # the key's line sets the depth: items two spaces further in
            line = parts[i - 1].rsplit(b"\n", 1)[-1]
            indent = len(line) - len(line.lstrip(b" ")) + 2
        yield from found[int(part)].chunks(indent)


def write_file(path: Any, document: Any) -> None:
    """`file_text(document)` written to `path`, an array plan's lists a piece at a time."""
    found: list[Any] = []
    swapped = _swap_lazy(document, found, whole=False)
    if not found:
        path.write_text(file_text(document), encoding="utf-8")
        return
    import orjson

    encoded = orjson.dumps(swapped, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    with open(path, "wb") as f:
        for piece in _pieces(encoded, found, indented=True):
            f.write(piece)
        f.write(b"\n")


def file_text(document: Any) -> str:
    """A plan file's text: keys in the order the document gives them (Kafka's reassignment
    layout), indented by two spaces, UTF-8 as is, as `json.dumps(indent=2)` lays it out.
    orjson encodes it (the standard encoder was most of `expand --out`'s time at 10,000
    partitions); what orjson refuses falls back to the standard encoder."""
    import orjson

    found: list[Any] = []
    swapped = _swap_lazy(document, found, whole=False)
    if found:
        encoded = orjson.dumps(swapped, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
        return (b"".join(_pieces(encoded, found, indented=True)) + b"\n").decode("utf-8")
    try:
        option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        return (orjson.dumps(document, default=_plain, option=option) + b"\n").decode("utf-8")
    except orjson.JSONEncodeError:
        return json.dumps(document, indent=2, ensure_ascii=False, default=_plain) + "\n"


def dumps(document: Any, *, pretty: bool | None = None) -> str:
    """Machine output: deterministic bytes. Keys sorted (as strings: broker maps keyed by id
    sort "1", "10", "2"), UTF-8 as is; indented by two spaces when `pretty` (default: when
    stdout is a terminal), else compact (no spaces). orjson encodes it (the standard
    encoder, indented, was a quarter of a large plan's time); what orjson refuses (an
    integer over 64 bits) falls back to the standard encoder with the same layout."""
    import orjson

    if pretty is None:
        pretty = pretty_for(sys.stdout)
    found: list[Any] = []
    document = _swap_lazy(document, found, whole=pretty)  # the pieces are compact only
    if found:
        encoded = orjson.dumps(document, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
        return (b"".join(_pieces(encoded, found, indented=False)) + b"\n").decode("utf-8")
    option = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    if pretty:
        option |= orjson.OPT_INDENT_2
    try:
        return (orjson.dumps(document, default=_plain, option=option) + b"\n").decode("utf-8")
    except orjson.JSONEncodeError:
        separators = (",", ": ") if pretty else (",", ":")
        text = json.dumps(
            _keys_as_text(document),
            indent=2 if pretty else None,
            separators=separators,
            sort_keys=True,
            ensure_ascii=False,
            default=_plain,
        )
        return text + "\n"


def _plain(value: Any) -> Any:
    """What JSON has no type for but a report may hold: any other mapping, as a dict."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _keys_as_text(value: Any) -> Any:
    """Keys as strings before sorting, as orjson sorts them (the fallback path only)."""
    if isinstance(value, Mapping):
        return {str(k): _keys_as_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_keys_as_text(v) for v in value]
    return value


def pretty_for(out: IO[str]) -> bool:
    """Indented JSON for a person at a terminal, compact for a pipe, a file or a program."""
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def emit_envelope(
    data: Any,
    errors: list[dict[str, str]] | None = None,
    *,
    status: str = "",
    file: IO[str] | None = None,
) -> None:
    out = file or sys.stdout
    run = state()
    document = envelope(run.command, data, errors, status=status)
    pretty = pretty_for(out)
    buffer = getattr(out, "buffer", None)
    found: list[Any] = []
    swapped = _swap_lazy(document, found, whole=pretty)
    if found and buffer is not None:  # an array plan's lists: written a piece at a time
        import orjson

        encoded = orjson.dumps(swapped, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
        out.flush()
        for piece in _pieces(encoded, found, indented=False):
            buffer.write(piece)
        buffer.write(b"\n")
        buffer.flush()
    else:  # `swapped` has the lists as dicts when pretty (built once)
        out.write(dumps(swapped if pretty else document, pretty=pretty))
    out.flush()
    run.envelope_sent = True


def one_line(message: str) -> str:
    return " ".join(str(message).split())


def report_error(exc: BaseException, code: ExitCode, *, code_name: str, message: str) -> int:
    """Print `error: ...` on stderr (traceback only with --debug); with --output json also one
    error envelope on stdout, unless the command already printed its own."""
    run = state()
    if run.debug:
        traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.write(f"error: {one_line(message)}\n")
    sys.stderr.flush()
    if run.output == "json" and not run.envelope_sent:
        emit_envelope(None, [{"code": code_name, "message": one_line(message)}])
    return int(code)


def cli_words(message: str) -> str:
    """A library message in the command line's words (kreplica.errors.flag_words: `rf` ->
    --rf), an option a cluster entry or a variable set named as set there (`zookeeper` ->
    `zookeeper` of cluster 'prod' in FILE)."""
    return flag_words(message, state().flag_names)


def report_kreplica_error(exc: KreplicaError) -> int:
    message = cli_words(exc.message)
    return report_error(exc, exc.exit_code, code_name=exc.code, message=message)


INTERRUPTED = "interrupted; nothing was changed"


def report_interrupted() -> int:
    """Ctrl-C: one line on stderr (what was changed, when a command started changing the
    cluster), exit 130, and with --output json an envelope with status "interrupted"."""
    run = state()
    message = one_line(run.interrupt_note or INTERRUPTED)
    if sys.stderr.isatty():
        sys.stderr.write("\n")  # end the line the terminal's ^C echo is on
    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()
    if run.output == "json" and not run.envelope_sent:
        emit_envelope(None, [{"code": "interrupted", "message": message}], status="interrupted")
    return int(ExitCode.INTERRUPTED)
