"""`conformance init` as a porter meets it: each starter, filled with a tiny correct engine, passes the whole corpus.

For every language whose toolchain is on PATH, the starter is written with `conformance init`, its hooks file is
replaced by the engine in tests/starters/<lang>/, and the exact build and run commands `init` printed are run
from the folder it was run in. The unfilled starter must run too, answering every case with a clear error.
Each language's starter is built at most twice per session (filled and unfilled); Rust is the slow one.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conformance.commands.init import BUILD_OUTPUTS, LANGUAGES, quote
from conformance.fixture import load_corpus

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
STARTERS = ROOT / "conformance" / "starters"
ENGINES = Path(__file__).resolve().parent / "starters"
TOOLS: dict[str, tuple[str, ...]] = {
    "python": (),
    "javascript": ("node",),
    "go": ("go",),
    "rust": ("cargo",),
    "java": ("mvn", "javac", "java"),
    "cpp": ("g++", "make"),
}
HOOKS = {
    "python": "engine_hooks.py",
    "javascript": "hooks.mjs",
    "go": "hooks.go",
    "rust": "src/hooks.rs",
    "java": "src/main/java/conformance/Hooks.java",
    "cpp": "hooks.hpp",
}
#: Every (case, level) of the corpus: what a conforming adapter that declares every level passes.
RESULTS = sum(len(fixture.levels) for fixture in load_corpus())


def shell(command: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """A command as a porter types it, with the kit's `conformance` and `python` first on PATH."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def init(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "conformance"), "init", *args], cwd=cwd, capture_output=True, text=True)


def next_commands(stdout: str) -> list[str]:
    """The commands `init` says to run next, in order (the build, if any, then `conformance run`)."""
    return paragraph(stdout, "next:")


def paragraph(stdout: str, heading: str) -> list[str]:
    """The indented commands under the line of init's output that starts with heading, up to the next blank line."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    return [line.strip() for line in lines[start + 1 : end]]


def needs(language: str) -> None:
    """Skip, saying why, where the language's toolchain (or, for Java, Maven Central) is missing."""
    for tool in TOOLS[language]:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH, so the {language} starter cannot be built here")
    if language == "java" and not maven_central_reachable():
        pytest.skip("Maven Central (repo.maven.apache.org) is not reachable, so mvn cannot fetch its build plugins")


def maven_central_reachable() -> bool:
    """Whether Maven Central answers, or mvn has its plugins already (an offline machine with a filled ~/.m2)."""
    if (Path.home() / ".m2" / "repository" / "org" / "apache" / "maven" / "plugins" / "maven-jar-plugin").is_dir():
        return True
    try:
        with socket.create_connection(("repo.maven.apache.org", 443), timeout=5):
            return True
    except OSError:
        return False


#: A panic (or exception) the test engine raises in tanh, per language: (the line it goes into, the line with it).
PANICS = {
    "python": ('"tanh": lambda a: (lambda t:', '"tanh": lambda a: [][0] if a == a else (lambda t:'),
    "javascript": ("tanh: (a) => {", 'tanh: (a) => { if (a === a) throw new RangeError("tanh is broken");'),
    "go": ('\tcase "tanh":\n', '\tcase "tanh":\n\t\tif a == a {\n\t\t\tpanic("tanh is broken")\n\t\t}\n'),
    "rust": ('"tanh" => {\n', '"tanh" => {\n            if a == a {\n                panic!("tanh is broken");\n            }\n'),
    "java": (
        'case "tanh" -> {\n',
        'case "tanh" -> {\n                    if (a == a) throw new IllegalStateException("tanh is broken");\n',
    ),
    "cpp": (
        'else if (op == "tanh") {\n',
        'else if (op == "tanh") {\n            if (a == a) throw std::runtime_error("tanh is broken");\n',
    ),
}
_built: dict[tuple[str, str], tuple[Path, str]] = {}


@pytest.fixture(scope="session")
def starter(tmp_path_factory):
    """starter(language, engine) -> (folder init ran in, the `conformance run` command it printed), built once.

    engine: "unfilled" (the hooks as init wrote them), "filled" (the correct test engine) or "panics" (it, broken in tanh).
    """

    def get(language: str, engine: str) -> tuple[Path, str]:
        needs(language)
        if (language, engine) not in _built:
            cwd = tmp_path_factory.mktemp(f"{language}-{engine}")
            out = init(cwd, language, "my adapter")
            assert out.returncode == 0, out.stderr
            *build, run = next_commands(out.stdout)
            if engine != "unfilled":
                source = (ENGINES / language / Path(HOOKS[language]).name).read_text()
                if engine == "panics":
                    before, after = PANICS[language]
                    assert source.count(before) == 1, before
                    source = source.replace(before, after)
                (cwd / "my adapter" / HOOKS[language]).write_text(source)
            for command in build:
                made = shell(command, cwd)
                assert made.returncode == 0, f"{command}\n{made.stdout[-3000:]}{made.stderr[-3000:]}"
            _built[language, engine] = cwd, run
        return _built[language, engine]

    return get


def run_json(cwd: Path, command: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    assert command.startswith("conformance run --command ") and "--expected-failures" in command
    out = shell(f"{command} --json report.json", cwd)
    assert (cwd / "report.json").exists(), out.stdout[-2000:] + out.stderr[-2000:]
    return out, json.loads((cwd / "report.json").read_text())


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_starter_filled_with_a_correct_engine_passes_every_case_at_every_level(starter, language):
    cwd, command = starter(language, "filled")
    out, report = run_json(cwd, command)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (adapter,) = report["adapters"]
    assert adapter["engine"] == {"name": "starter-test-engine", "version": "0.1.0", "language": language}
    counts = {key: adapter[key] for key in ("passed", "failed", "errors", "unsupported", "xfailed", "xpassed", "not_run")}
    assert counts == {"passed": RESULTS, "failed": 0, "errors": 0, "unsupported": 0, "xfailed": 0, "xpassed": 0, "not_run": 0}


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_pytest_ini_init_writes_runs_the_gate_from_the_folder_above_and_from_inside(starter, language):
    cwd, _ = starter(language, "filled")
    folder = cwd / "my adapter"
    ini = (folder / "pytest.ini").read_text()
    assert "conformance_command = " in ini and "conformance_expected_failures = expected-failures.toml" in ini
    assert ("conformance_build = " in ini) == (language in ("rust", "go", "java", "cpp"))
    for where, args in ((cwd, "'my adapter'"), (folder, "")):
        out = shell(f"python -m pytest -q {args}".strip(), where)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        assert f"{RESULTS} subtests passed" in out.stdout, out.stdout[-2000:]
        assert f"compared {RESULTS} of {RESULTS} (case, level) results" in out.stdout


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_unfilled_starter_runs_and_answers_every_case_with_a_not_implemented_error(starter, language):
    cwd, command = starter(language, "unfilled")
    out, report = run_json(cwd, command)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    results = report["results"]
    assert len(results) == RESULTS
    # The starter declares values, gradients and errors and the core ops: those are errors naming the hook to
    # connect, the rest unsupported (the levels it leaves out, and the cases of the optional ops sigmoid and sqrt,
    # which its hooks declare only once the engine has them).
    optional = {fixture.id for fixture in load_corpus() if set(fixture.ops) & {"sigmoid", "sqrt"}}
    assert optional
    for result in results:
        if result["level"] in ("values", "gradients", "errors") and result["case"] not in optional:
            assert result["outcome"] == "error", result
            assert "not implemented: connect Engine" in result["message"] and "to your engine" in result["message"], result
        else:
            assert result["outcome"] == "unsupported", result
    assert report["adapters"][0]["not_run"] == 0


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_engine_that_panics_at_one_step_gets_a_fault_there_and_the_other_steps_still_compare(starter, language):
    cwd, command = starter(language, "panics")
    out, report = run_json(cwd, command)
    assert out.returncode == 1
    uses_tanh = {fixture.id for fixture in load_corpus() if "tanh" in fixture.ops}
    marker = "IndexError: list index out of range" if language == "python" else "tanh is broken"
    assert uses_tanh
    for result in report["results"]:
        if result["case"] in uses_tanh:
            # The step's fault (protocol 2.1), not the whole case's error: a difference at the tanh step, or a level
            # left with nothing to compare (unsupported) whose sentence names the fault behind the skipped steps.
            assert result["outcome"] in ("failed", "unsupported"), result
            assert "fault" in result["message"] and marker in result["message"], result
        else:
            assert result["outcome"] == "passed", result
    assert any(r["case"] in uses_tanh and r["outcome"] == "failed" for r in report["results"])


def speak(cwd: Path, run: str, program: list[dict]) -> list[dict]:
    """The observations the adapter `run` names answers for one program, over the protocol by hand."""
    command = shlex.split(run)[shlex.split(run).index("--command") + 1]
    requests = [{"type": "hello", "protocol": 2}, {"type": "run", "case": "by-hand", "program": program}, {"type": "shutdown"}]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(
        command,
        shell=True,
        cwd=cwd,
        env=env,
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    replies = [json.loads(line) for line in out.stdout.splitlines()]
    assert [reply["type"] for reply in replies] == ["hello", "result"], out.stdout
    return replies[1]["observations"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_faulting_step_is_answered_with_its_fault_its_dependants_skipped_and_the_rest_run(starter, language):
    cwd, run = starter(language, "panics")
    marker = "IndexError: list index out of range" if language == "python" else "tanh is broken"
    program = [
        {"id": "x", "op": "variable", "value": 0.5},
        {"id": "t", "op": "tanh", "operands": ["x"]},  # the engine panics here
        {"id": "u", "op": "mul", "operands": ["t", "x"]},  # names t: skipped, naming step 1
        {"id": "y", "op": "add", "operands": ["x", "x"]},  # independent: runs
        {"id": "v", "op": "add", "operands": ["u", "y"]},  # names u, itself skipped: skipped, naming step 2
        {"op": "backward", "output": "v"},  # skipped, naming step 4
        {"op": "backward", "output": "y"},  # runs: the gradients of the ids the engine created
    ]
    observations = speak(cwd, run, program)
    assert observations[0] == {"value": 0.5, "tracked": True}
    assert set(observations[1]) == {"fault"} and marker in observations[1]["fault"], observations[1]
    assert observations[2] == {"skipped": 1}
    assert observations[3] == {"value": 1.0, "tracked": True}
    assert observations[4] == {"skipped": 2}
    assert observations[5] == {"skipped": 4}
    assert observations[6]["gradients"] == {"x": 2.0, "y": 1.0}, observations[6]


#: What the test engines print to stdout when a variable is 12345, per language: each must reach stderr only.
NOISE = {
    "python": ["engine noise at import", "engine noise on stdout", "engine noise written to fd 1"],
    "javascript": ["engine noise on stdout", "engine noise written to process.stdout"],
    "go": ["engine noise on stdout", "engine noise written to fd 1"],
    "rust": ["engine noise on stdout"],
    "java": ["engine noise on stdout"],
    "cpp": ["engine noise on stdout", "engine noise written with printf"],
}


@pytest.mark.parametrize("language", LANGUAGES)
def test_what_the_engine_prints_to_stdout_goes_to_stderr_and_only_protocol_lines_reach_the_harness(starter, language):
    cwd, run = starter(language, "filled")
    command = shlex.split(run)[shlex.split(run).index("--command") + 1]
    program = [{"id": "x", "op": "variable", "value": 12345.0}, {"op": "backward", "output": "x"}]
    requests = [{"type": "hello", "protocol": 2}, {"type": "run", "case": "noisy", "program": program}, {"type": "shutdown"}]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(
        command,
        shell=True,
        cwd=cwd,
        env=env,
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    replies = [json.loads(line) for line in out.stdout.splitlines()]  # every stdout line is a protocol message
    assert [reply["type"] for reply in replies] == ["hello", "result"], out.stdout
    assert replies[1]["observations"][0] == {"value": 12345.0, "tracked": True}
    for text in NOISE[language]:
        assert text in out.stderr and text not in out.stdout, (text, out.stderr)


def test_init_prints_the_files_it_wrote_and_the_exact_next_commands(tmp_path):
    out = init(tmp_path, "rust")
    assert out.returncode == 0, out.stderr
    written = sorted(p.relative_to(tmp_path / "conformance-adapter").as_posix() for p in tmp_path.rglob("*") if p.is_file())
    shipped = (p.relative_to(STARTERS / "rust").as_posix() for p in starter_sources("rust"))
    assert written == sorted([".gitignore" if name == "gitignore" else name for name in shipped] + ["pytest.ini"])
    for name in written:
        assert f"conformance-adapter/{name}" in out.stdout
    assert next_commands(out.stdout) == [
        "cargo build --release --manifest-path conformance-adapter/Cargo.toml",
        'conformance run --command "conformance-adapter/target/release/conformance-adapter"'
        " --expected-failures conformance-adapter/expected-failures.toml",
    ]
    readme = (tmp_path / "conformance-adapter" / "README.md").read_text()
    assert "@DIR@" not in readme and "conformance-adapter/target/release/conformance-adapter" in readme


def test_init_refuses_to_overwrite_and_then_writes_nothing_at_all(tmp_path):
    folder = tmp_path / "conformance-adapter"
    folder.mkdir()
    (folder / "README.md").write_text("the porter's own notes\n")
    out = init(tmp_path, "go")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "conformance: error: conformance-adapter/README.md already exists; nothing was written"
        " (choose another DIR or move it away)"
    ]
    assert [p.name for p in folder.iterdir()] == ["README.md"]
    assert (folder / "README.md").read_text() == "the porter's own notes\n"


def test_init_that_fails_halfway_removes_what_it_wrote(tmp_path):
    folder = tmp_path / "conformance-adapter"
    folder.mkdir()
    (folder / "src").write_text("a file where the Rust starter needs a folder\n")
    out = init(tmp_path, "rust")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith("conformance: error: cannot write the starter to conformance-adapter: ")
    assert out.stderr.rstrip().endswith("nothing was written")
    assert [p.name for p in folder.iterdir()] == ["src"]
    file = tmp_path / "notes.txt"
    file.write_text("mine\n")
    out = init(tmp_path, "python", "notes.txt")
    assert out.returncode == 2 and "notes.txt is a file, not a folder; nothing was written" in out.stderr
    assert file.read_text() == "mine\n"


def test_init_again_over_a_filled_starter_keeps_the_porters_hooks(tmp_path):
    assert init(tmp_path, "javascript").returncode == 0
    hooks = tmp_path / "conformance-adapter" / "hooks.mjs"
    hooks.write_text("// my engine\n")
    again = init(tmp_path, "javascript")
    assert again.returncode == 2 and "already exists; nothing was written" in again.stderr
    assert hooks.read_text() == "// my engine\n"


def test_a_language_without_a_starter_is_pointed_to_the_protocol_and_the_python_starter(tmp_path):
    out = init(tmp_path, "cobol")
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "conformance: error: no starter for 'cobol' (starters: python, rust, go, javascript, java, cpp);"
        " write your adapter from `conformance docs protocol`, with `conformance init python` as a model of the loop"
    )
    assert list(tmp_path.iterdir()) == []


def test_cpp_and_cxx_spellings_name_the_cpp_starter(tmp_path):
    out = init(tmp_path, "C++")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "conformance-adapter" / "hooks.hpp").is_file()


def starter_sources(language: str) -> list[Path]:
    return [
        p
        for p in sorted((STARTERS / language).rglob("*"))
        if p.is_file() and not any(part in BUILD_OUTPUTS for part in p.parts) and p.suffix != ".pyc"
    ]


def test_the_wheel_carries_every_starter_file_byte_for_byte():
    from installed import wheel

    with zipfile.ZipFile(wheel()) as archive:
        names = set(archive.namelist())
        for language in LANGUAGES:
            sources = starter_sources(language)
            assert sources, language
            for path in sources:
                name = "conformance/" + path.relative_to(ROOT / "conformance").as_posix()
                assert name in names, f"{name} is not in the wheel"
                assert archive.read(name) == path.read_bytes(), f"{name} differs from the checkout's"


MUTANTS = {
    # A wrong answer through the starter is a failure on exactly the cases it touches, never masked by the loop.
    "relu-at-zero": (
        '"relu": lambda a: (a, [1.0]) if a > 0.0',
        '"relu": lambda a: (a, [1.0]) if a >= 0.0',
        "failed",
        "ops/relu/",
    ),
    # An EngineError without its fields is the hooks' bug: an error reply saying what is missing.
    "leaf-error-without-value": (
        'raise EngineError("non-finite-leaf", operation=operation, value=value)',
        'raise EngineError("non-finite-leaf", operation=operation)',
        "error",
        "errors/non-finite-leaf",
    ),
}


@pytest.mark.parametrize("mutant", MUTANTS)
def test_a_wrong_python_engine_behind_the_starter_is_caught_on_exactly_the_cases_it_breaks(tmp_path, mutant):
    before, after, outcome, prefix = MUTANTS[mutant]
    assert init(tmp_path, "python").returncode == 0
    source = (ENGINES / "python" / "engine_hooks.py").read_text()
    assert source.count(before) == 1
    (tmp_path / "conformance-adapter" / "engine_hooks.py").write_text(source.replace(before, after))
    command = 'conformance run --command "python3 conformance-adapter/adapter.py"'
    out, report = run_json(tmp_path, f"{command} --expected-failures conformance-adapter/expected-failures.toml")
    assert out.returncode == 1
    bad = [r for r in report["results"] if r["outcome"] != "passed"]
    assert bad and all(r["outcome"] == outcome and r["case"].startswith(prefix) for r in bad), bad
    if outcome == "error":
        assert all("EngineError non-finite-leaf has fields ['operation']; it needs exactly" in r["message"] for r in bad)


def test_the_installed_kit_writes_a_starter_that_passes_from_a_folder_outside_the_checkout(tmp_path):
    from installed import venv

    kit = venv()
    env = {**os.environ, "PATH": f"{kit}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(["conformance", "init", "python"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    shutil.copyfile(ENGINES / "python" / "engine_hooks.py", tmp_path / "conformance-adapter" / "engine_hooks.py")
    (command,) = next_commands(out.stdout)
    ran = subprocess.run(f"{command} --json report.json", shell=True, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["adapters"][0]["passed"] == RESULTS


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_expected_failures_starter_is_empty_and_its_commented_example_is_a_valid_entry(tmp_path, language):
    from conformance.expected import load_expected

    text = (STARTERS / language / "expected-failures.toml").read_text()
    (tmp_path / "as-written.toml").write_text(text)
    assert load_expected(tmp_path / "as-written.toml") == []
    example = text[text.index("# [[expected]]") :]
    (tmp_path / "uncommented.toml").write_text("".join(line[2:] + "\n" for line in example.splitlines()))
    (entry,) = load_expected(tmp_path / "uncommented.toml")
    assert entry.matches("structure/deep-chain-10000", "order")


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_ci_snippet_runs_the_commands_init_prints(tmp_path, language):
    out = init(tmp_path, language, "ports/adapter")
    assert out.returncode == 0, out.stderr
    *build, run = next_commands(out.stdout)
    snippet = " ".join((tmp_path / "ports" / "adapter" / "ci-snippet.yml").read_text().split())
    if build:
        # The gate runs the build itself (--build), so CI never checks a binary older than the code.
        (gate, pytest_gate) = paragraph(out.stdout, "in CI and pytest")
        assert gate == run.replace("conformance run ", f"conformance run --build {quote(build[0])} ", 1)
        assert gate in snippet  # a folded YAML block: the same words once whitespace is normalised
        assert pytest_gate.startswith(f"pytest --conformance-build {quote(build[0])} --conformance-command ")
    else:
        assert run in snippet and "--build" not in out.stdout
    assert 'pip install "${CONFORMANCE_KIT}[pytest]"' in snippet and "CONFORMANCE_KIT:" in snippet


def test_the_go_and_rust_starters_and_test_engines_are_formatted_as_their_toolchains_want(tmp_path):
    checked = 0
    if shutil.which("gofmt"):
        for folder in (STARTERS / "go", ENGINES / "go"):
            out = subprocess.run(["gofmt", "-l", "."], cwd=folder, capture_output=True, text=True)
            assert out.returncode == 0 and out.stdout == "", out.stdout + out.stderr
        checked += 1
    if shutil.which("rustfmt"):
        files = [STARTERS / "rust" / "src" / "main.rs", STARTERS / "rust" / "src" / "hooks.rs", ENGINES / "rust" / "hooks.rs"]
        out = subprocess.run(["rustfmt", "--check", "--edition", "2021", *map(str, files)], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        checked += 1
    if not checked:
        pytest.skip("neither gofmt nor rustfmt is on PATH")


@pytest.mark.parametrize(
    "language, ignored",
    [("rust", "target/"), ("go", "/adapter"), ("python", "__pycache__/"), ("java", "target/"), ("cpp", "/adapter")],
)
def test_the_starter_keeps_its_build_output_out_of_the_porters_git(tmp_path, language, ignored):
    out = init(tmp_path, language, "adapter-dir")
    assert out.returncode == 0, out.stderr
    gitignore = tmp_path / "adapter-dir" / ".gitignore"
    assert ignored in gitignore.read_text().splitlines()
    assert not (tmp_path / "adapter-dir" / "gitignore").exists()


def test_the_java_and_cpp_starter_tests_skip_saying_why_where_their_toolchain_or_maven_central_is_missing(monkeypatch):
    this = sys.modules[__name__]
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool in ("mvn", "g++") else f"/usr/bin/{tool}")
    with pytest.raises(pytest.skip.Exception, match="mvn is not on PATH, so the java starter cannot be built here"):
        needs("java")
    with pytest.raises(pytest.skip.Exception, match=r"g\+\+ is not on PATH, so the cpp starter cannot be built here"):
        needs("cpp")
    monkeypatch.setattr(shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(this, "maven_central_reachable", lambda: False)
    with pytest.raises(pytest.skip.Exception, match="Maven Central .* is not reachable"):
        needs("java")
    needs("cpp")  # with its tools present, the C++ starter needs nothing else
