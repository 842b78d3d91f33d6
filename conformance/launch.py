"""Opening an adapter: the one way ``conformance run``, ``conformance fuzz`` and the pytest plugin prepare one.

``choose_adapters`` picks the adapters a command names (``--command``,
``--adapter`` or the whole registry). ``open_adapter`` then prepares one, in this
order: its requirements are checked (a missing tool or module makes it
*unavailable*, with the reason), its build runs when stale, its expected-failures
file is read, and its transport is made (the process starts at the first case).
A missing requirement and a failed build are results the caller reports in its own
words, not exceptions; a malformed expected-failures file raises ExpectedError.

Timeouts, most specific first: the caller's (a command-line option), the
adapter's registry entry, the defaults in conformance.transport.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from .errors import UsageError
from .expected import Expected, load_expected
from .registry import AdapterConfig, RegistryError, ad_hoc, registered
from .transport import CASE_TIMEOUT, HANDSHAKE_TIMEOUT, SubprocessTransport


def choose_adapters(
    *, command: Optional[str], names: Optional[Sequence[str]], expected_failures: Optional[Path], registry: Path
) -> list[AdapterConfig]:
    """The adapters a CLI command runs: ``command`` (ad hoc, with its ``expected_failures`` file), then ``names``.

    Without ``command`` and ``names``, every adapter of the registry. Raises UsageError naming the
    registry for a registry that is missing or malformed, or an adapter it does not register.
    """
    adapters: list[AdapterConfig] = []
    try:
        if command:
            adapters.append(ad_hoc(command, expected_failures))
        if names or not command:
            if not registry.exists():
                raise UsageError(
                    f"no adapter registry at {registry}: give the adapter as --command CMD, or a registry as --registry FILE"
                )
            adapters += registered(registry, names or None, "--adapter")
    except RegistryError as error:
        raise UsageError(str(error)) from None
    return adapters


@dataclass
class OpenedAdapter:
    """One adapter prepared by ``open_adapter``: ready to run, or why it cannot.

    Exactly one of ``transport`` (ready), ``unavailable`` (a requirement is missing: the
    reason) and ``build_failure`` (the build command's failure with its output's tail) is set.
    The caller owns the transport and ends it with ``close``.
    """

    config: AdapterConfig
    transport: Optional[SubprocessTransport] = None
    expected: list[Expected] = field(default_factory=list)
    """The entries of its expected-failures file (none when it has no file)."""
    unavailable: Optional[str] = None
    build_failure: Optional[str] = None

    def close(self) -> None:
        """Stop the adapter's process, if one was started."""
        if self.transport is not None:
            self.transport.close()


def open_adapter(
    adapter: AdapterConfig,
    *,
    timeout: Optional[float] = None,
    handshake_timeout: Optional[float] = None,
    log: Optional[Callable[[str], None]] = None,
    expected_missing_ok: bool = False,
) -> OpenedAdapter:
    """Check the adapter's requirements, build it if stale, read its expected failures, make its transport.

    ``timeout`` (per case) and ``handshake_timeout`` (to answer hello) win over the registry's,
    which win over the defaults. ``log`` hears what is built and why (``AdapterConfig.run_build``).
    ``expected_missing_ok`` accepts a named expected-failures file that does not exist yet (for
    ``--update-expected``, which creates it). Raises ExpectedError for a malformed or missing file.
    """
    missing = adapter.missing()
    if missing:
        return OpenedAdapter(adapter, unavailable=missing)
    failure = adapter.run_build(log)
    if failure:
        return OpenedAdapter(adapter, build_failure=failure)
    expected = load_expected(adapter.expected_failures_path(), missing_ok=expected_missing_ok)
    transport = SubprocessTransport(
        adapter.argv(),
        cwd=adapter.cwd,
        env=adapter.env,
        timeout=timeout or adapter.timeout or CASE_TIMEOUT,
        start_timeout=handshake_timeout or adapter.handshake_timeout or HANDSHAKE_TIMEOUT,
    )
    return OpenedAdapter(adapter, transport, expected)
