"""The pytest plugin: the fixtures as tests, one per (adapter, case), with a subtest per level.

    pytest --conformance-adapter rust                 # a registered adapter (repeatable)
    pytest --conformance-command "./my-adapter"       # an unregistered one
    pytest --conformance-adapter rust -n auto --junitxml=report.xml

Settings are resolved in this order: the command line, then the ini file
(``conformance_adapters``, ``conformance_command``, ``conformance_registry``,
``conformance_timeout``), then the defaults. Expected-failure lists are
honoured: a listed failure is an xfail, a listed pass fails as a stale entry.
Each pytest process (each xdist worker) keeps one adapter process per adapter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pytest

from .expected import Expected, load_expected
from .fixture import FIXTURES_DIR, Fixture, FixtureBug, load_corpus
from .registry import REGISTRY, AdapterConfig, ad_hoc, load_registry
from .runner import run_case, select
from .transport import AdapterFault, SubprocessTransport

CASES_MODULE = Path(__file__).with_name("_pytest_cases.py")


@dataclass
class _Engine:
    config: AdapterConfig
    unavailable: Optional[str] = None
    transport: Optional[SubprocessTransport] = None
    expected: list[Expected] = field(default_factory=list)


@dataclass
class _State:
    adapters: list[AdapterConfig]
    fixtures: list[Fixture]
    timeout: float
    engines: dict[str, _Engine] = field(default_factory=dict)

    def engine(self, adapter: AdapterConfig) -> _Engine:
        if adapter.name not in self.engines:
            engine = _Engine(adapter)
            engine.unavailable = adapter.missing()
            if engine.unavailable is None:
                failure = adapter.run_build()
                if failure:
                    engine.unavailable = f"build failed: {failure}"
            if engine.unavailable is None:
                engine.expected = load_expected(adapter.expected_failures_path())
                engine.transport = SubprocessTransport(adapter.argv(), cwd=adapter.cwd, env=adapter.env, timeout=self.timeout)
            self.engines[adapter.name] = engine
        return self.engines[adapter.name]


STATE = pytest.StashKey[_State]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Declare the options, each once, with its help text and ini twin."""
    group = parser.getgroup("conformance", "scalar autodiff conformance")
    group.addoption(
        "--conformance-adapter",
        action="append",
        default=[],
        metavar="NAME",
        help="run the fixtures against this registered adapter (repeatable)",
    )
    group.addoption("--conformance-command", default=None, metavar="CMD", help="run the fixtures against this adapter command")
    group.addoption(
        "--conformance-expected-failures", default=None, metavar="FILE", help="expected-failures file for --conformance-command"
    )
    group.addoption(
        "--conformance-case", action="append", default=[], metavar="PATTERN", help="only cases whose id matches (fnmatch)"
    )
    group.addoption(
        "--conformance-registry",
        default=None,
        metavar="FILE",
        help="adapter registry (default: the kit's adapters/adapters.toml)",
    )
    group.addoption("--conformance-timeout", default=None, type=float, metavar="SECONDS", help="per-case timeout (default 60)")
    parser.addini("conformance_adapters", "registered adapters to run", type="linelist", default=[])
    parser.addini("conformance_command", "an adapter command to run", default="")
    parser.addini("conformance_registry", "adapter registry file", default="")
    parser.addini("conformance_timeout", "per-case timeout in seconds", default="60")


def pytest_configure(config: pytest.Config) -> None:
    """Resolve the settings; stash them when conformance tests were asked for."""
    names = config.getoption("conformance_adapter") or config.getini("conformance_adapters")
    command = config.getoption("conformance_command") or config.getini("conformance_command") or None
    if not names and not command:
        return
    registry_path = Path(config.getoption("conformance_registry") or config.getini("conformance_registry") or REGISTRY)
    timeout = config.getoption("conformance_timeout") or float(config.getini("conformance_timeout"))
    adapters: list[AdapterConfig] = []
    if names:
        registry = load_registry(registry_path)
        for name in names:
            if name not in registry:
                raise pytest.UsageError(
                    f"--conformance-adapter {name!r} is not registered in {registry_path} (known: {', '.join(registry)})"
                )
            adapters.append(registry[name])
    if command:
        adapter = ad_hoc(command)
        expected = config.getoption("conformance_expected_failures")
        if expected:
            adapter = AdapterConfig(**{**adapter.__dict__, "expected_failures": str(Path(expected).resolve())})
        adapters.append(adapter)
    try:
        corpus = load_corpus(FIXTURES_DIR)
    except FixtureBug as bug:
        raise pytest.UsageError(f"fixture bug: {bug}") from None
    fixtures = select(corpus, config.getoption("conformance_case") or None, None)
    config.stash[STATE] = _State(adapters, fixtures, timeout)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add one test per (adapter, case) before selection (-k) and xdist distribution."""
    if STATE not in config.stash:
        return
    module = pytest.Module.from_parent(session, path=CASES_MODULE, nodeid="conformance")
    items.extend(item for item in module.collect() if isinstance(item, pytest.Item))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the conformance test over (adapter, case)."""
    if "conformance_case" not in metafunc.fixturenames:
        return
    state = metafunc.config.stash[STATE]
    pairs = [(adapter, fixture) for adapter in state.adapters for fixture in state.fixtures]
    metafunc.parametrize("conformance_case", pairs, ids=[f"{a.name}:{f.id}" for a, f in pairs])


def pytest_unconfigure(config: pytest.Config) -> None:
    """Shut every adapter process down."""
    if STATE in config.stash:
        for engine in config.stash[STATE].engines.values():
            if engine.transport is not None:
                engine.transport.close()


def check_case(request: Any, subtests: Any, adapter: AdapterConfig, fixture: Fixture) -> None:
    """Run one case and report each level as a subtest (called by the generated test)."""
    engine = request.config.stash[STATE].engine(adapter)
    if engine.unavailable:
        pytest.skip(f"{adapter.name}: unavailable: {engine.unavailable}")
    assert engine.transport is not None
    try:
        hello = engine.transport.handshake()
    except AdapterFault as fault:
        pytest.fail(f"error: {adapter.name} failed to start: {fault}", pytrace=False)
    results = run_case(adapter.name, engine.transport, hello, fixture, engine.expected)
    if all(r.outcome == "unsupported" for r in results):
        pytest.skip(f"unsupported: {results[0].message}")
    for result in results:
        with subtests.test(msg=result.level, level=result.level):
            text = "\n".join([result.message, *(f"likely bug: {d}" for d in result.diagnosis)])
            if result.outcome == "unsupported":
                pytest.skip(f"unsupported: {result.message}")
            elif result.outcome == "xfailed":
                pytest.xfail(f"expected failure: {result.reason}")
            elif result.outcome == "failed":
                pytest.fail(f"failed: {text}", pytrace=False)
            elif result.outcome == "error":
                pytest.fail(f"error: {text}", pytrace=False)
            elif result.outcome == "xpassed":
                pytest.fail(f"unexpected pass: {result.message}", pytrace=False)
