"""The Go port trains like the reference: from the same parameters, on the same documents,
its first steps' losses agree with the reference's within the model record's tolerance."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from reference.adam import Adam
from reference.model import GPT, GPTConfig
from reference.tokenizer import encode

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "fixtures/llm-records/reference-width.json"
DOCUMENTS = ["emma", "olivia", "ava"]


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain")
def test_go_training_follows_the_reference_loss_curve_for_the_first_steps(tmp_path: Path) -> None:
    record = json.loads(RECORD.read_text())
    binary = tmp_path / "train"
    subprocess.run(["go", "build", "-o", str(binary), "./cmd/train"], cwd=ROOT / "adapters/go", check=True)
    corpus = tmp_path / "documents.txt"
    corpus.write_text("\n".join(DOCUMENTS) + "\n")
    command = [str(binary), "-steps", str(len(DOCUMENTS)), "-init", str(RECORD), "-corpus", str(corpus)]
    out = subprocess.run([*command, "-shuffle=false", "-json"], capture_output=True, text=True, check=True).stdout
    go = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [step["document"] for step in go] == DOCUMENTS

    model = GPT.from_values(GPTConfig(), {p["name"]: p["values"] for p in record["parameters"]})
    adam = Adam(model.parameters(), len(DOCUMENTS))
    rel, floor = record["comparison"]["rel"], record["comparison"]["abs"]
    for index, document in enumerate(DOCUMENTS):
        loss = model.loss(encode(document))
        loss.backward()
        adam.step(index)
        want, got = loss.value, go[index]["loss"]
        assert abs(want - got) <= floor + rel * max(abs(want), abs(got)), f"step {index + 1}: reference {want!r}, Go {got!r}"
