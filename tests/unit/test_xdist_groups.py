"""The xdist groups of scripts/test (tests/support/groups.py): the tests that share a cluster
land in one group, whatever links them; each instance of a parametrized module fixture is a
group of its own; a fixture asked for by name counts through its `uses` mark."""

from __future__ import annotations

import pytest

from tests.support.groups import group_names, resources

pytest_plugins = ["pytester"]


def test_tests_linked_through_any_resource_share_one_group() -> None:
    named = group_names(
        {
            "a": ["zk_cluster"],
            "b": ["zk_cluster", "test_x.py::snap"],
            "c": ["test_x.py::snap"],  # linked to a only through b
            "d": ["kraft_cluster"],
            "e": [],
            "f": ["test_y.py::own(cluster=zk)"],
        }
    )
    assert named == {
        "a": "zk_cluster",
        "b": "zk_cluster",
        "c": "zk_cluster",
        "d": "kraft_cluster",
        "f": "test_y.py::own(cluster=zk)",
    }


def test_a_group_name_never_ends_in_a_bracket() -> None:
    # xdist ignores an "@group" suffix that a "]" follows
    named = group_names({"t[1]": ["test_z.py::cluster[p]"]})
    assert "]" not in named["t[1]"]


def test_resources_from_fixtures_params_and_uses_marks(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    uses: fixtures asked for by name\n")
    items = pytester.getitems(
        """
        import pytest

        @pytest.fixture(scope="session")
        def zk_cluster():
            return 1

        @pytest.fixture(scope="module", params=["zk", "kraft"])
        def own(request):
            return request.param

        @pytest.fixture(scope="module")
        def client(own):
            return own

        @pytest.fixture(params=[pytest.param("zk", marks=pytest.mark.uses("zk_scratch"))])
        def by_name(request):
            return request.param

        def test_direct(zk_cluster):
            pass

        def test_through_a_module_fixture(client):
            pass

        def test_asked_by_name(by_name):
            pass

        def test_nothing(tmp_path):
            pass
        """
    )
    got = {item.name: resources(item) for item in items}
    assert got == {
        "test_direct": {"zk_cluster"},
        "test_through_a_module_fixture[zk]": {
            "test_resources_from_fixtures_params_and_uses_marks.py::client(own=zk)",
            "test_resources_from_fixtures_params_and_uses_marks.py::own(own=zk)",
        },
        "test_through_a_module_fixture[kraft]": {
            "test_resources_from_fixtures_params_and_uses_marks.py::client(own=kraft)",
            "test_resources_from_fixtures_params_and_uses_marks.py::own(own=kraft)",
        },
        "test_asked_by_name[zk]": {"zk_scratch"},
        "test_nothing": set(),
    }
