"""The kit's own errors (not the engine's: those are the contract's, in ``reference.errors``)."""


class UsageError(Exception):
    """A mistake in the command line or configuration; reported as one line, exit 2."""
