"""Session resources (sandbox clusters, the Spark session) stopped as soon as their worker is
done with them, not at the end of the session.

Under `--dist loadgroup` (scripts/test) every test that uses a session cluster runs on the
worker that owns it, in one go (tests/support/groups.py): once that worker moves on to a test
of another group, nothing in this run uses the cluster again. Stopping it then frees its CPU
(an idle Kafka node still burns 2-3% of a core, a 6-node cluster a sixth of one) and memory for
the tests still running. In one process (`-n 0`) a cluster's tests are spread over the run, so
resources live to the end of the session, as pytest's session scope says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager

import pytest


class Lifetimes:
    """The open resources of one process and the ones it stopped early."""

    def __init__(self) -> None:
        self._open: dict[str, Callable[[], None]] = {}
        self._released: set[str] = set()

    @contextmanager
    def releasable(self, name: str) -> Iterator[ExitStack]:
        """An ExitStack for the session fixture `name`: what it enters is undone when the
        fixture ends, or earlier by `release_all_but`."""
        with ExitStack() as stack:
            self._open[name] = stack.close
            try:
                yield stack
            finally:
                self._open.pop(name, None)

    def release_all_but(self, keep: Iterable[str]) -> None:
        """Stop every open resource not in `keep` (called between two groups of tests)."""
        for name in sorted(set(self._open) - set(keep)):
            close = self._open.pop(name)
            self._released.add(name)
            close()

    def refuse_released(self, used: Iterable[str], test: str) -> None:
        """Fail a test that asks for a resource this worker already stopped (a test outside
        its group: declare what it uses, see tests/support/groups.py)."""
        gone = sorted(self._released.intersection(used))
        if gone:
            pytest.fail(
                f"{test} uses {', '.join(gone)}, which this worker stopped after its group's "
                "last test: the test is not in that xdist group (tests/support/groups.py)",
                pytrace=False,
            )


# this test process's
SESSION = Lifetimes()
releasable = SESSION.releasable
