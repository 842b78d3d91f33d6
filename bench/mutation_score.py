"""The corpus against the catalogue of broken engines: how many it kills, how many the diagnosis names first.

Prints a Markdown table for the README: each bug of ``conformance.mutants``,
the first (case, level) that fails on it (smallest programs first) and
whether the diagnosis names that bug first somewhere.
"""

from __future__ import annotations

from conformance.diagnose import catalogue_score
from conformance.fixture import load_corpus
from conformance.mutants import BUGS


def main() -> None:
    """Score the catalogue and print the table."""
    scores = catalogue_score(load_corpus())
    killed = sum(score.killed_by is not None for score in scores)
    named = sum(score.named_first_at is not None for score in scores)
    print(f"mutation score: {killed}/{len(scores)} killed; diagnosis names {named}/{len(scores)} first\n")
    print("| bug | first caught by | named first |")
    print("|---|---|---|")
    for score in scores:
        caught = f"`{score.killed_by[0]}` [{score.killed_by[1]}]" if score.killed_by else "**not caught**"
        print(f"| `{score.bug}` | {caught} | {'yes' if score.named_first_at else 'no'} |")
    assert set(BUGS) == {score.bug for score in scores}


if __name__ == "__main__":
    main()
