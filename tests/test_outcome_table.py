"""One table maps each outcome to its word, JUnit element and pytest action, and every reporter reads it."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.report import details_text, write_junit
from conformance.runner import OUTCOME_TABLE, OUTCOMES, UNEXPECTED, AdapterRun, Outcome, PytestAction, Result


def one_of_each():
    return [
        Result("engine", f"case/{outcome}", "values", outcome, f"what happened: {outcome}", reason=f"why: {outcome}")
        for outcome in OUTCOMES
    ]


def test_every_outcome_has_a_row_and_the_gate_fails_on_the_rows_that_say_so():
    assert set(OUTCOME_TABLE) == set(Outcome)
    assert set(UNEXPECTED) == {Outcome.FAILED, Outcome.ERROR, Outcome.XPASSED, Outcome.NOT_RUN}
    # An outcome that fails the gate never passes or skips in pytest, nor is skipped or absent in JUnit.
    for outcome, row in OUTCOME_TABLE.items():
        assert (row.pytest == PytestAction.FAIL) == row.unexpected, outcome
        assert (row.junit in ("failure", "error")) == row.unexpected, outcome


def test_junit_gives_each_result_its_rows_element_and_counts_them(tmp_path):
    run = AdapterRun("engine", results=one_of_each())
    write_junit([run], tmp_path / "report.xml")
    suite = ET.parse(tmp_path / "report.xml").getroot().find("testsuite")
    assert suite is not None
    for case in suite.iter("testcase"):
        if case.get("name") == "(adapter)":
            continue
        outcome = Outcome(case.get("name").split("/", 1)[1])
        elements = [child.tag for child in case]
        row = OUTCOME_TABLE[outcome]
        assert elements == ([row.junit] if row.junit else []), outcome
        if row.junit == "skipped":
            assert case[0].get("message") == row.text(next(r for r in run.results if r.outcome == outcome))
    for element, attribute in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        assert int(suite.get(attribute)) == sum(1 for row in OUTCOME_TABLE.values() if row.junit == element)


def test_the_terminal_details_head_each_unexpected_result_with_its_rows_word():
    run = AdapterRun("engine", results=one_of_each())
    text = details_text([run])
    for outcome in (Outcome.FAILED, Outcome.ERROR, Outcome.XPASSED):
        assert f"{OUTCOME_TABLE[outcome].word} engine case/{outcome} [values]" in text
