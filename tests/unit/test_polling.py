"""tests/support/polling.py: stops at the first good answer, gives up at the bound."""

from __future__ import annotations

import itertools

from tests.support.polling import eventually


def test_returns_the_first_answer_that_is_done() -> None:
    counter = itertools.count()
    assert eventually(lambda: next(counter), lambda n: n == 3, interval_s=0) == 3
    assert next(counter) == 4  # not asked again once done


def test_gives_up_at_the_bound_with_the_last_answer() -> None:
    counter = itertools.count()
    last = eventually(lambda: next(counter), lambda n: n < 0, timeout_s=0.05, interval_s=0.01)
    assert last >= 1 and last == next(counter) - 1
