"""What a judge model (knowledge.judge) is asked by the walk (policies.conflicts): the pairs
no rule can decide, asked outside the comparing transaction, and the pairs it answered kept
where both memories still say what they said when asked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knowledge import contradictions, judge
from knowledge.keep import Row, keep
from knowledge.models import MemoryPair, PairKind
from memories.models import Memory


@dataclass(frozen=True)
class Undecided:
    """Two memories about the same thing that no rule can tell apart or together: what a
    judge model is asked (knowledge.judge), outside the comparing transaction."""

    first: Row
    second: Row
    verdict: contradictions.Verdict

    def question(self) -> judge.Question:
        return judge.Question(
            self.first.content, self.second.content, self.first.content_hash,
            self.second.content_hash,
        )  # fmt: skip


def outcome(verdict: contradictions.Verdict) -> str:
    """Why a comparison opened a pair or did not, as the walk reports it."""
    if verdict.kind is not None:
        return f"{verdict.kind}: {verdict.evidence.get('class', '')}".rstrip(": ")
    if verdict.evidence.get("undecided"):
        return "related, no rule decides"
    if verdict.similarity >= contradictions.NAMED:
        return "related, nothing disagrees"
    return "not about the same thing"


def keep_answers(
    asked: Sequence[Undecided], answers: dict[tuple[str, str], judge.Answer], *, found_by: str
) -> dict[int | None, int]:
    """Write the pairs a judge found among ``asked`` (a conflict or a repeat), where both
    memories still say what they said when asked and are still active."""
    wanted = {u.first.id for u in asked} | {u.second.id for u in asked}
    current = dict(
        Memory.objects.filter(pk__in=wanted, active=True).values_list("id", "content_hash")
    )
    verdicts: dict[tuple[int, int], tuple[Row, Row, contradictions.Verdict]] = {}
    for item in asked:
        answer = answers.get((item.first.content_hash, item.second.content_hash))
        if answer is None or answer.verdict not in (PairKind.CONFLICT, PairKind.REPEAT):
            continue
        if (current.get(item.first.id), current.get(item.second.id)) != (
            item.first.content_hash,
            item.second.content_hash,
        ):
            continue  # changed or gone since: the next walk reads them again
        evidence = {
            **item.verdict.evidence,
            "class": "judge",
            "judge": {"model": answer.model, "reason": answer.reason, "cached": answer.cached},
            "differs": [
                {
                    "class": "judge",
                    "about": answer.reason[:80],
                    "first": answer.first_span,
                    "second": answer.second_span,
                    **_spans(item.first.content, answer.first_span, "firstSpan"),
                    **_spans(item.second.content, answer.second_span, "secondSpan"),
                }
            ],
        }
        evidence.pop("undecided", None)
        verdict = contradictions.Verdict(answer.verdict, item.verdict.similarity, evidence)
        verdicts[(item.first.id, item.second.id)] = (item.first, item.second, verdict)
    if not verdicts:
        return {}
    keys = list(verdicts)
    known = list(
        MemoryPair.objects.filter(
            first_id__in=[k[0] for k in keys], second_id__in=[k[1] for k in keys]
        )
    )
    known = [pair for pair in known if (pair.first_id, pair.second_id) in verdicts]
    read = {row.id: row for first, second, _ in verdicts.values() for row in (first, second)}
    return keep(verdicts, known, read, found_by)


def _spans(text: str, span: str, name: str) -> dict[str, list[int]]:
    start = text.find(span) if span else -1
    return {name: [start, start + len(span)]} if start >= 0 else {}
