"""Whether two quantities (knowledge.claims) measure one thing, and whether they agree: a
measure read as the other side's where it is ambiguous ("m" beside a time), two settings
kept apart, a value within 1 % the same. Pure."""

from __future__ import annotations

from knowledge.claims import Quantity


def _as(quantity: Quantity, other: Quantity) -> tuple[str, float]:
    """A quantity in "m" read as the other side's measure: minutes beside a time, metres
    beside a length; a count beside the same count per a thing its words name ("batch
    size is 1024 sequences" / "a batch of 512 sequences")."""
    dimension, per = other.dimension.rpartition("/")[::2]
    if dimension == quantity.dimension and dimension.startswith("count:"):
        return (
            (other.dimension, quantity.value)
            if per in quantity.subject
            else (quantity.dimension, quantity.value)
        )
    if quantity.dimension != "m":
        return quantity.dimension, quantity.value
    if other.dimension == "time":
        return "time", quantity.value * 60
    if other.dimension == "length":
        return "length", quantity.value
    return "m", quantity.value


def same_quantity(
    a: Quantity, b: Quantity, *, aligned: bool = False, close: bool = False, related: bool = False
) -> bool:
    """The same measure of the same thing, with values that differ: a count of the same
    thing (in sentences with words in common, ``related``), or a measure whose nearest words
    (what it measures) one side shares with the other's; ``aligned``, two sentences with
    much in common, says so too, and so do two words around the numbers in common between
    memories about the same thing (``close``)."""
    (dimension_a, value_a), (dimension_b, value_b) = _as(a, b), _as(b, a)
    # two settings are two things ("warn_after" / "error_after", "redis.timeout" /
    # "http.timeout"), unless one names the other in full ("SessionPolicy.IDLE_TIMEOUT" /
    # "IDLE_TIMEOUT")
    if dimension_a != dimension_b or (
        a.setting and b.setting and not same_name(a.setting, b.setting)
    ):
        return False
    if a.modifies or b.modifies:
        # "a 24-hour format" is about a format, not "the last 12 hours"
        return any(q.modifies and q.anchor & (o.subject | o.anchor) for q, o in ((a, b), (b, a)))
    if abs(value_a - value_b) <= 0.01 * max(abs(value_a), abs(value_b)):
        return False
    if dimension_a.startswith("count:"):
        return aligned or related or bool(a.subject & b.subject)
    return (
        aligned
        or bool(a.anchor & b.subject)
        or bool(b.anchor & a.subject)
        or (close and len(a.subject & b.subject) >= 2)
    )


def same_name(a: str, b: str) -> bool:
    """One name, or one that ends the other ("IDLE_TIMEOUT" / "SessionPolicy.IDLE_TIMEOUT")."""
    return a == b or a.endswith("." + b) or b.endswith("." + a)


def same_value(a: Quantity, b: Quantity) -> bool:
    (dimension_a, value_a), (dimension_b, value_b) = _as(a, b), _as(b, a)
    return dimension_a == dimension_b and abs(value_a - value_b) <= 0.01 * max(value_a, value_b)
