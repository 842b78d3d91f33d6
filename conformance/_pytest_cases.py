"""The test the pytest plugin parametrizes over (adapter, case); see conformance.pytest_plugin."""

from conformance.pytest_plugin import check_case


def test_conformance(request, subtests, conformance_case):  # type: ignore[no-untyped-def]
    """One canonical case on one adapter, a subtest per level."""
    adapter, fixture = conformance_case
    check_case(request, subtests, adapter, fixture)
