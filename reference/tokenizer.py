"""The character tokenizer of the tiny GPT (docs/contract.md section 11): 26 letters and a boundary token.

Letters ``a``-``z`` are tokens 0-25 and ``BOS`` (26) marks both ends of a
document, so ``"emma"`` becomes ``[26, 4, 12, 12, 0, 26]``: the model learns
to predict the first letter from the boundary and the boundary after the last
letter. Documents are lowercased first; any other character is rejected with
an error that says which character and where, because silently dropping it
would train on a different document than the user wrote. The Go port
(``adapters/go/gpt``) uses the same token numbers.
"""

from __future__ import annotations

import string

LETTERS = string.ascii_lowercase
#: The boundary token that starts and ends every document.
BOS = len(LETTERS)
#: Letters plus the boundary token.
VOCAB_SIZE = BOS + 1


class TokenError(ValueError):
    """A document with a character outside a-z (after lowercasing); carries the character and its column."""

    def __init__(self, document: str, character: str, column: int) -> None:
        self.document = document
        self.character = character
        self.column = column
        super().__init__(f"character {character!r} at column {column} of {document!r} is not a letter a-z")


def encode(document: str) -> list[int]:
    """The tokens of one document wrapped in boundary tokens; raises TokenError on a non-letter."""
    tokens = [BOS]
    for column, character in enumerate(document.lower(), start=1):
        index = LETTERS.find(character)
        if index < 0:
            raise TokenError(document, character, column)
        tokens.append(index)
    tokens.append(BOS)
    return tokens


def decode(tokens: list[int]) -> str:
    """The letters of ``tokens``, boundary tokens left out."""
    return "".join(LETTERS[token] for token in tokens if token != BOS)
