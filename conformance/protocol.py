"""The adapter protocol (docs/protocol.md): its version and what changed between versions."""

from __future__ import annotations

#: The protocol version this kit speaks; an adapter's hello must carry the same number.
PROTOCOL_VERSION = 2

#: What changed since each older version, for the message an adapter speaking it gets.
CHANGES_SINCE: dict[int, str] = {
    1: (
        "protocol 2 renamed the edge vocabulary so that it reads like micrograd's: program steps name their "
        "'operands' (was 'args'); pass-record edges are {consumer, slot, operand, local_derivative, upstream, "
        "contribution, operand_tracked, before, after} (were child, operand (the slot), parent, parent_tracked); "
        "non-finite-local-derivative carries 'slot' (was 'operand'); non-finite-contribution carries consumer, slot, "
        "operand (were child, operand, parent). See docs/protocol.md, 'Changes from protocol 1'"
    ),
}


def version_mismatch(spoken: object) -> str:
    """The message for an adapter whose hello carries protocol ``spoken`` instead of PROTOCOL_VERSION."""
    text = f"wrong protocol version: the adapter speaks {spoken!r}, the harness speaks {PROTOCOL_VERSION}"
    if isinstance(spoken, int) and not isinstance(spoken, bool) and spoken in CHANGES_SINCE:
        text += f": {CHANGES_SINCE[spoken]}"
    return text
