"""What the database keeps: a session is its command log (design.md, principle 4).

Everything a viewer sees is rebuilt from a `Session` row: the scenario's own source text (so a share link replays
exactly, even after the library changed), the backend, the seed and the commands applied so far. The log is
append-only except for "back" and "reset", which rewrite it; `version` grows on every change so another server
process knows whether its in-memory backend is still current.
"""

from __future__ import annotations

import secrets

from django.db import models


def new_slug() -> str:
    # 16 random bytes, URL-safe: stable, shareable and unguessable.
    return secrets.token_urlsafe(16)


class Session(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_slug, editable=False)
    # "" for free play; otherwise the scenario's id and the exact text it was loaded from.
    scenario_id = models.CharField(max_length=100, blank=True, default="")
    scenario_source = models.TextField(blank=True, default="")
    backend = models.CharField(max_length=16, default="sim")
    seed = models.IntegerField(default=0)
    # The command log. Each entry is a dict:
    #   {"step": <the step in the scenario file's own form>, "n": k (scenario step index) | absent, "outcome": "ok"}
    #   {"add": {"name": "C", "producer": {...}} | {"name": "c2", "consumer": {...}}, "outcome": "ok"}
    commands = models.JSONField(default=list)
    version = models.PositiveIntegerField(default=0)
    # The "run" button: a runner applies the remaining scenario steps while this is true ("pause" clears it).
    running = models.BooleanField(default=False)
    # A keyed hash of the creating client's address: the per-client creation limit, without storing addresses.
    client_key = models.CharField(max_length=64, blank=True, default="", db_index=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"session {self.id} ({self.scenario_id or 'free play'}, {len(self.commands)} commands)"

    @property
    def is_free_play(self) -> bool:
        return not self.scenario_id
