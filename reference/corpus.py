"""Training corpora for the tiny GPT: the built-in element names, or a user file.

A corpus is a list of documents, each a short string of letters. The built-in
one is the names of the 118 chemical elements, written out here so the kit
needs no download and no data file. A user file holds one document per line;
blank lines are skipped, surrounding whitespace is stripped, letters are
lowercased. Every problem is a ``CorpusError`` whose message names the file
(and the line, for a bad character), so the CLI can print it as one line.
"""

from __future__ import annotations

from pathlib import Path

from .tokenizer import TokenError, encode

#: The chemical elements in atomic-number order (hydrogen 1 ... oganesson 118), IUPAC spelling.
ELEMENTS: tuple[str, ...] = (
    "hydrogen", "helium", "lithium", "beryllium", "boron", "carbon", "nitrogen", "oxygen", "fluorine", "neon",
    "sodium", "magnesium", "aluminium", "silicon", "phosphorus", "sulfur", "chlorine", "argon", "potassium", "calcium",
    "scandium", "titanium", "vanadium", "chromium", "manganese", "iron", "cobalt", "nickel", "copper", "zinc",
    "gallium", "germanium", "arsenic", "selenium", "bromine", "krypton", "rubidium", "strontium", "yttrium", "zirconium",
    "niobium", "molybdenum", "technetium", "ruthenium", "rhodium", "palladium", "silver", "cadmium", "indium", "tin",
    "antimony", "tellurium", "iodine", "xenon", "caesium", "barium", "lanthanum", "cerium", "praseodymium", "neodymium",
    "promethium", "samarium", "europium", "gadolinium", "terbium", "dysprosium", "holmium", "erbium", "thulium", "ytterbium",
    "lutetium", "hafnium", "tantalum", "tungsten", "rhenium", "osmium", "iridium", "platinum", "gold", "mercury",
    "thallium", "lead", "bismuth", "polonium", "astatine", "radon", "francium", "radium", "actinium", "thorium",
    "protactinium", "uranium", "neptunium", "plutonium", "americium", "curium", "berkelium", "californium", "einsteinium",
    "fermium", "mendelevium", "nobelium", "lawrencium", "rutherfordium", "dubnium", "seaborgium", "bohrium", "hassium",
    "meitnerium", "darmstadtium", "roentgenium", "copernicium", "nihonium", "flerovium", "moscovium", "livermorium",
    "tennessine", "oganesson",
)  # fmt: skip


class CorpusError(ValueError):
    """A corpus that cannot be used: missing, unreadable, empty, or with a non-letter; names the file and line."""


def builtin_corpus() -> list[str]:
    """The built-in training documents: the element names."""
    return list(ELEMENTS)


def read_corpus(path: Path) -> list[str]:
    """The documents of a user file, one per line; raises CorpusError naming the file (and line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CorpusError(f"{path}: no such corpus file") from None
    except IsADirectoryError:
        raise CorpusError(f"{path}: is a directory, not a corpus file") from None
    except UnicodeDecodeError as error:
        raise CorpusError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise CorpusError(f"{path}: cannot read: {error.strerror or error}") from None
    documents = []
    for number, line in enumerate(text.splitlines(), start=1):
        document = line.strip().lower()
        if not document:
            continue
        try:
            encode(document)
        except TokenError as error:
            raise CorpusError(
                f"{path}:{number}: character {error.character!r} in {line.strip()!r} is not a letter a-z "
                "(one document per line, letters only)"
            ) from None
        documents.append(document)
    if not documents:
        raise CorpusError(f"{path}: the corpus is empty (expected one document per line)")
    return documents
