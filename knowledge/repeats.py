"""Whether one memory repeats another: neither adds anything of substance (pure, two
readings in; knowledge.contradictions asks it once no class finds a disagreement)."""

from __future__ import annotations

from knowledge.reading import Words, overlap

# How many words that carry meaning a memory needs to repeat another with other words.
SUBSTANCE = 3


def repeats(
    a: Words, b: Words, threshold: float, cosine: float | None, common: frozenset[str] = frozenset()
) -> bool:
    """Neither adds anything of substance: the same names, numbers and identifiers (at
    least ``threshold`` of the smaller side's are in the other), and either nearly all of
    the smaller one's words in the larger or, for a paraphrase, one meaning to the model."""
    content_a, content_b = a.content - common, b.content - common
    (small, small_content), (large, large_content) = sorted(
        ((a, content_a), (b, content_b)), key=lambda side: len(side[1])
    )
    # A text of one or two words that carry meaning ("fix for the fix") says too little to
    # repeat another, unless the other says it word for word.
    if len(small_content) < SUBSTANCE and a.tokens != b.tokens:
        return False
    if not small_content:
        return a.tokens == b.tokens and bool(a.tokens)
    covered = len(small_content & large_content) / len(small_content)
    specific_small, specific_large = small.specific - common, large.specific - common
    if specific_small or specific_large:
        names = overlap(specific_small, specific_large) if specific_small else 0.0
        if names < threshold or len(specific_large - specific_small) > max(2, len(specific_small)):
            return False
    extra = large_content - small_content
    missing = len(small_content) - len(small_content & large_content)
    # Nearly all of the smaller one's words, at most one in four of them missing (in a short
    # memory, a missing word is often the very thing it is about: "cookie support").
    if (
        covered >= threshold
        and missing * 4 < len(small_content)
        and (len(extra) <= max(3, len(small_content)))
    ):
        return True
    # Paraphrases: other words for the same claim, which the model sees as one meaning.
    return cosine is not None and cosine >= 0.8 and covered >= 0.4
