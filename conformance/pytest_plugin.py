"""The pytest plugin: the fixtures as tests, one per (adapter, case), with a subtest per level.

    pytest --conformance-adapter rust                 # a registered adapter (repeatable)
    pytest --conformance-command "./my-adapter"       # an unregistered one
    pytest --conformance-command "./my-adapter" -n auto --junitxml=conformance.xml

Every setting is declared once in OPTIONS, as a command-line option and its
ini twin; they are resolved in this order: the command line, then the ini file,
then the defaults. Expected-failure lists are honoured: a listed failure is an
xfail, a listed pass fails as a stale entry. Selecting zero cases is a usage
error naming the fixtures folder, never a green run of nothing. Each pytest
process (each xdist worker) keeps one ``AdapterSession`` per adapter, so an
unresponsive adapter is given up on after a few timeouts and its remaining
tests fail at once with one diagnosis. The terminal summary shows the counts
per adapter and level and, as the CLI does, a warning line per adapter whose
expected-failures file still has unreviewed drafts; ``--conformance-json``
writes the CLI's JSON report and ``--conformance-html`` its HTML report (a wrong
answer's observations travel from the xdist workers with its result).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

import pytest

from .corpora import KIT_WORD, fixture_dirs, load_corpora
from .errors import UsageError
from .expected import ExpectedError, check_cases, load_expected
from .fixture import Fixture, FixtureBug
from .launch import OpenedAdapter, open_adapter
from .protocol import LEVELS
from .pytest_gather import PROPERTY, Gatherer
from .registry import REGISTRY, AdapterConfig, RegistryError, ad_hoc, registered
from .runner import OUTCOME_TABLE, AdapterSession, Outcome, PytestAction, Result, select
from .transport import CASE_TIMEOUT, HANDSHAKE_TIMEOUT

CASES_MODULE = Path(__file__).with_name("_pytest_cases.py")


@dataclass(frozen=True)
class Option:
    """One setting: its command-line option, its ini key, its help text and its kind."""

    flag: str
    ini: str
    help: str
    kind: str = "string"  # string, list (repeatable / linelist), float
    metavar: str = "VALUE"

    @property
    def dest(self) -> str:
        """The attribute name pytest gives the option."""
        return self.flag.lstrip("-").replace("-", "_")


#: Every setting of the plugin; README's table of options is checked against this list by a test.
OPTIONS = (
    Option("--conformance-adapter", "conformance_adapters", "registered adapter to run (repeatable)", "list", "NAME"),
    Option("--conformance-command", "conformance_command", "an unregistered adapter command to run", "string", "CMD"),
    Option(
        "--conformance-expected-failures",
        "conformance_expected_failures",
        "expected-failures file for the command",
        "string",
        "FILE",
    ),
    Option("--conformance-case", "conformance_cases", "only cases whose id matches (fnmatch; repeatable)", "list", "PATTERN"),
    Option("--conformance-level", "conformance_levels", "only these levels (repeatable; default: all)", "list", "LEVEL"),
    Option(
        "--conformance-fixtures",
        "conformance_fixtures",
        "fixtures folder (repeatable; default: the kit's corpus, which the word `kit` names among others)",
        "list",
        "DIR",
    ),
    Option("--conformance-registry", "conformance_registry", "adapter registry (for adapter names)", "string", "FILE"),
    Option("--conformance-timeout", "conformance_timeout", f"per-case timeout (default {CASE_TIMEOUT:g} s)", "float", "S"),
    Option(
        "--conformance-handshake-timeout",
        "conformance_handshake_timeout",
        f"seconds an adapter has to answer hello (default {HANDSHAKE_TIMEOUT:g})",
        "float",
        "S",
    ),
    Option("--conformance-json", "conformance_json", "write the JSON report of the run to this file", "string", "FILE"),
    Option(
        "--conformance-html",
        "conformance_html",
        "write the HTML report of the run (matrix, graph of every failure) to this file",
        "string",
        "FILE",
    ),
    Option(
        "--conformance-allow-empty",
        "conformance_allow_empty",
        "an empty selection of cases is not an error (true/false)",
        "string",
        "BOOL",
    ),
    Option(
        "--conformance-allow-nothing-compared",
        "conformance_allow_nothing_compared",
        "an adapter that compared nothing (no op or level of the selected cases declared) does not fail the session (true/false)",
        "string",
        "BOOL",
    ),
    Option(
        "--conformance-build",
        "conformance_build",
        "a build command for the command, run once before the session (its time is not charged to the handshake)",
        "string",
        "CMD",
    ),
)

#: Settings that are paths: given in an ini file they are relative to the ini file's folder, not the current one.
PATH_OPTIONS = frozenset(
    {
        "--conformance-expected-failures",
        "--conformance-fixtures",
        "--conformance-registry",
        "--conformance-json",
        "--conformance-html",
    }
)
#: What the plugin says when it has no adapter to run.
NOT_CONFIGURED = (
    "the conformance plugin has no adapter to run: give --conformance-command CMD or --conformance-adapter NAME, "
    "or the ini key conformance_command / conformance_adapters"
)


def options_markdown() -> str:
    """The table of options and ini keys that README.md shows (a test holds the two equal)."""
    rows = ["| option | ini key | meaning |", "|---|---|---|"]
    for option in OPTIONS:
        flag = f"`{option.flag} {option.metavar}`"
        rows.append(f"| {flag} | `{option.ini}` | {option.help} |")
    return "\n".join(rows)


@dataclass
class _Engine:
    opened: OpenedAdapter
    unavailable: Optional[str] = None
    session: Optional[AdapterSession] = None


@dataclass
class _State:
    adapters: list[AdapterConfig]
    fixtures: list[Fixture]
    levels: Optional[list[str]]
    timeout: Optional[float]
    handshake_timeout: Optional[float]
    json_path: Optional[Path]
    html_path: Optional[Path] = None
    allow_nothing_compared: bool = False
    engines: dict[str, _Engine] = field(default_factory=dict)

    def engine(self, adapter: AdapterConfig) -> _Engine:
        if adapter.name not in self.engines:
            opened = open_adapter(adapter, timeout=self.timeout, handshake_timeout=self.handshake_timeout)
            engine = _Engine(opened)
            if opened.unavailable:
                engine.unavailable = opened.unavailable
            elif opened.build_failure:
                engine.unavailable = f"build failed: {opened.build_failure}"
            else:
                assert opened.transport is not None
                engine.session = AdapterSession(adapter.name, opened.transport, opened.expected)
            self.engines[adapter.name] = engine
        return self.engines[adapter.name]


STATE = pytest.StashKey[_State]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Declare every option of OPTIONS once, with its help text and ini twin."""
    group = parser.getgroup("conformance", "scalar autodiff conformance")
    for option in OPTIONS:
        if option.kind == "list":
            group.addoption(option.flag, action="append", default=[], metavar=option.metavar, help=option.help)
            parser.addini(option.ini, option.help, type="linelist", default=[])
        else:
            group.addoption(option.flag, default=None, metavar=option.metavar, help=option.help)
            parser.addini(option.ini, option.help, default="")


def setting(config: pytest.Config, flag: str) -> Any:
    """One setting: the command line, else the ini file, else empty (None or []).

    A path (PATH_OPTIONS) from the command line is relative to the folder pytest was started in; one from the
    ini file is relative to the ini file's folder, so ``cd engine && pytest`` reads the same files.
    """
    option = next(o for o in OPTIONS if o.flag == flag)
    value = config.getoption(option.dest) or config.getini(option.ini)
    if flag in PATH_OPTIONS and value:
        base = config.invocation_params.dir if config.getoption(option.dest) else _ini_folder(config)
        if option.kind == "list":  # the word that names the kit's corpus is no path
            return [item if item == KIT_WORD else str(Path(base) / item) for item in value]
        return str(Path(base) / str(value))
    if option.kind == "list":
        return list(value or [])
    if not value:
        return None
    if option.kind == "float":
        try:
            number = float(value)
        except ValueError:
            raise pytest.UsageError(f"{flag} / {option.ini}: {value!r} is not a number of seconds") from None
        if not number > 0:
            raise pytest.UsageError(f"{flag} / {option.ini}: {value!r} must be positive")
        return number
    return str(value)


def _ini_folder(config: pytest.Config) -> Path:
    """The folder of the ini file pytest read (the folder it was started in when it read none)."""
    return config.inipath.parent if config.inipath is not None else config.invocation_params.dir


def _given(config: pytest.Config) -> list[str]:
    """The plugin's settings given on the command line or in the ini file, by their option names."""
    return [o.flag for o in OPTIONS if config.getoption(o.dest) or config.getini(o.ini)]


def _flag(config: pytest.Config, flag: str) -> bool:
    """A true/false setting."""
    return str(setting(config, flag) or "").lower() in ("1", "true", "yes")


def pytest_configure(config: pytest.Config) -> None:
    """Resolve the settings; stash them when conformance tests were asked for.

    A conformance setting without an adapter (say, only a fixtures folder) is a usage error naming what the
    plugin needs; with no setting at all the plugin stays out of the way until the session collects nothing.
    """
    names = setting(config, "--conformance-adapter")
    command = setting(config, "--conformance-command")
    if not names and not command:
        given = _given(config)
        if given:
            ini = f" (ini file: {config.inipath})" if config.inipath else " (pytest found no ini file)"
            raise pytest.UsageError(f"{NOT_CONFIGURED}; only {', '.join(given)} is set{ini}")
        return
    worker = getattr(config, "workerinput", None) is not None
    registry_path = Path(setting(config, "--conformance-registry") or REGISTRY)
    adapters: list[AdapterConfig] = []
    try:
        if names:
            if not registry_path.exists():
                raise pytest.UsageError(f"--conformance-adapter needs a registry: {registry_path} does not exist")
            adapters += registered(registry_path, names, "--conformance-adapter")
        if command:
            expected = setting(config, "--conformance-expected-failures")
            # A command from the ini file runs in the ini file's folder, as its paths are read from there.
            root = Path(config.invocation_params.dir) if config.getoption("conformance_command") else _ini_folder(config)
            build = setting(config, "--conformance-build")
            adapter = ad_hoc(
                command, Path(expected) if expected else None, root=root, build=build, option="--conformance-command"
            )
            if expected:
                load_expected(adapter.expected_failures_path())  # a bad or missing file is a usage error, now
            if build and not worker:  # once, in the controlling process, before any adapter starts
                failure = adapter.run_build()
                if failure:
                    raise pytest.UsageError(f"--conformance-build / conformance_build: {failure}")
            adapters.append(replace(adapter, build=None))
        elif setting(config, "--conformance-build"):
            raise pytest.UsageError("--conformance-build is the build of --conformance-command: give the command too")
    except (RegistryError, ExpectedError) as error:
        raise pytest.UsageError(str(error)) from None
    levels = setting(config, "--conformance-level") or None
    for level in levels or []:
        if level not in LEVELS:
            raise pytest.UsageError(f"--conformance-level {level!r}: not a level (levels: {', '.join(LEVELS)})")
    fixtures_dirs = fixture_dirs(setting(config, "--conformance-fixtures"))
    try:
        corpus = load_corpora(fixtures_dirs)
    except FixtureBug as bug:
        raise pytest.UsageError(f"fixture bug: {bug}") from None
    except UsageError as error:
        raise pytest.UsageError(str(error)) from None
    try:  # every case pattern of an expected-failures file must match a case of the corpus
        for adapter in adapters:
            check_cases(adapter.expected_failures_path(), {f.id for f in corpus})
    except ExpectedError as error:
        raise pytest.UsageError(str(error)) from None
    patterns = setting(config, "--conformance-case") or None
    fixtures = select(corpus, patterns, None)
    if not fixtures and not _flag(config, "--conformance-allow-empty"):
        from .commands.run import empty_selection_message

        raise pytest.UsageError(
            empty_selection_message(
                fixtures_dirs,
                len(corpus),
                patterns,
                None,
                case_option="--conformance-case",
                allow_option="--conformance-allow-empty",
                fixtures_option="--conformance-fixtures",
            )
        )
    json_path = setting(config, "--conformance-json")
    html_path = setting(config, "--conformance-html")
    if html_path:
        from .html import check_target

        try:
            check_target(Path(html_path), "--conformance-html")
        except UsageError as error:
            raise pytest.UsageError(str(error)) from None
    state = _State(
        adapters,
        fixtures,
        levels,
        setting(config, "--conformance-timeout"),
        setting(config, "--conformance-handshake-timeout"),
        Path(json_path) if json_path else None,
        Path(html_path) if html_path else None,
        _flag(config, "--conformance-allow-nothing-compared"),
    )
    config.stash[STATE] = state
    config.pluginmanager.register(Gatherer(state), "conformance-gatherer")


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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A session that collected no test at all, with the plugin given no adapter, is a usage error saying what it needs.

    Not a bare "no tests ran" (exit 5, which many CI setups accept): the usual cause is a conformance gate whose
    settings pytest did not read (an ini file in another folder, or a misspelt key).
    """
    config = session.config
    if STATE in config.stash or getattr(config, "workerinput", None) is not None:
        return
    if exitstatus != pytest.ExitCode.NO_TESTS_COLLECTED or session.testscollected:
        return
    if config.inipath is not None:
        ini = f"pytest read the ini file {config.inipath}, which sets neither"
    else:
        ini = f"pytest found no ini file (pytest.ini, pyproject.toml, tox.ini or setup.cfg) in {config.rootpath} or above"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"conformance: error: {NOT_CONFIGURED}; {ini}", red=True)
    session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_unconfigure(config: pytest.Config) -> None:
    """Shut every adapter process down."""
    if STATE in config.stash:
        for engine in config.stash[STATE].engines.values():
            engine.opened.close()


def check_case(request: Any, subtests: Any, adapter: AdapterConfig, fixture: Fixture) -> None:
    """Run one case and report each level as a subtest (called by the generated test)."""
    state = request.config.stash[STATE]
    engine = state.engine(adapter)
    if engine.unavailable:
        pytest.skip(f"{adapter.name}: unavailable: {engine.unavailable}")
    assert engine.session is not None
    was_down = engine.session.down is not None
    results = engine.session.run_case(fixture)
    if state.levels:
        results = [r for r in results if r.level in state.levels]
    down = engine.session.down
    hello = engine.session.hello
    gathered = [_result_data(r, state.html_path is not None) for r in results]
    data = {"adapter": adapter.name, "case": fixture.id, "results": gathered, "down": down.describe() if down else None}
    if hello is not None:
        data["hello"] = hello.to_json()
    request.node.user_properties.append((PROPERTY, json.dumps(data)))
    if down is not None and was_down:
        pytest.fail(f"not run: {down.headline} (the adapter's diagnosis is in the summary)", pytrace=False)
    if all(r.outcome == Outcome.UNSUPPORTED for r in results):
        pytest.skip(f"unsupported: {results[0].message}" if results else "no selected level applies to this case")
    for result in results:
        with subtests.test(msg=str(result.level), level=str(result.level)):
            row = OUTCOME_TABLE[result.outcome]
            if row.pytest == PytestAction.SKIP:
                pytest.skip(row.text(result))
            elif row.pytest == PytestAction.XFAIL:
                pytest.xfail(row.text(result))
            elif row.pytest == PytestAction.FAIL:
                pytest.fail(row.text(result), pytrace=False)


def _result_data(result: Result, observations: bool) -> dict[str, Any]:
    """A result as the controlling process receives it: the JSON report's entry, and a wrong answer's observations.

    The observations (an LLM case's are megabytes) travel only when an HTML report was asked for:
    user properties also end up in a JUnit XML file.
    """
    data = result.to_json()
    if observations and result.observations is not None:
        data["observations"] = [observation.to_json() for observation in result.observations]
        data["stderr"] = result.stderr
    return data
