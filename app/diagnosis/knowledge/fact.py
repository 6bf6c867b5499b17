"""The shape every row of knowledge shares: a pattern, who prints it, an example, a source."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    """One kind of line a server prints, and how the engine recognizes it."""

    pattern: str  # a regular expression, as `re` reads it (and Hyperscan, for the scanner's)
    engines: tuple[str, ...]  # the servers and tools that print such a line
    example: str  # a line as the engine prints it, which the pattern must match
    # Where such a line comes from: the engine and, where known, its file or message; "observed
    # in corpus case N" where the example is that case's line (tests/corpus/cases/N.log).
    source: str
