"""Session resources stopped between groups (tests/support/lifetimes.py): what is not kept is
closed once, what a later test still needs stays, and a test asking for a stopped one fails."""

from __future__ import annotations

import pytest

from tests.support.lifetimes import Lifetimes


def test_release_closes_what_is_not_kept_once_and_the_fixture_end_is_then_a_no_op() -> None:
    lifetimes = Lifetimes()  # not the session's: its clusters stay up
    closed: list[str] = []
    with lifetimes.releasable("one_cluster") as one, lifetimes.releasable("two_cluster") as two:
        one.callback(closed.append, "one")
        two.callback(closed.append, "two")
        lifetimes.release_all_but({"two_cluster", "test_x.py::own(cluster=zk)"})
        assert closed == ["one"]
        lifetimes.release_all_but({"two_cluster"})  # nothing more to close
        assert closed == ["one"]
    assert closed == ["one", "two"]  # the fixture's own end closes the one kept


def test_a_test_asking_for_a_released_resource_fails_naming_it() -> None:
    lifetimes = Lifetimes()
    with lifetimes.releasable("gone_cluster"):
        lifetimes.release_all_but(())
    lifetimes.refuse_released({"other_cluster"}, "test_a")  # not released: no failure
    with pytest.raises(pytest.fail.Exception, match="test_b uses gone_cluster"):
        lifetimes.refuse_released({"gone_cluster", "other_cluster"}, "test_b")
