"""The API's own table: the concurrency slots of its callers, when no Redis keeps them."""

from __future__ import annotations

from django.db import models


class SlotLease(models.Model):
    """Slot ``slot`` of a caller (an API key, a signed-in user or an address: ``ident``),
    held by the request whose ``lease`` it is until ``deadline``, free after (api.slots).
    A row per slot, taken and given back by updates that never touch an index, so they stay
    HOT however busy a key is."""

    ident = models.CharField(max_length=200)
    slot = models.PositiveSmallIntegerField()
    lease = models.UUIDField(null=True, blank=True)
    deadline = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ident", "slot"], name="slot_lease_unique"),
        ]

    def __str__(self) -> str:
        return f"slot {self.slot} of {self.ident}"
