"""What the database keeps: a session is its command log (design.md, principle 4), stored one row per command.

- `ScenarioText`: a scenario file's exact text, content-addressed (the same text has the same id, so the same
  link). Library sessions, shared scenarios and forks all point at one; `shared` makes it reachable at `/sc/<id>`.
- `Session`: the scenario text (None for free play), the backend, the profile (Kafka version x client), the seed,
  and `length` commands in its log;
  `version` grows on every change so that another server process knows whether its in-memory backend is current.
- `Command`: one command of a session's log: its position `seq`, the entry (the step in the scenario file's own
  form, or an actor added in free play), the outcome and the time. A command is appended in the same database
  transaction that checks and bumps the session's version. "back", "reset" and truncation mark rows `dropped`
  instead of rewriting anything: the live log is the rows not dropped, `seq` 0..length-1. What external clients sent
  (session/external.py) is the row's `payload`, bytes beside the entry, read only when the row is replayed.
- `Checkpoint`: the simulator's state after a session's first `length` entries, stored with its log
  (session/checkpoints.py), so that any process opens a session by thawing one and replaying the tail after it.
- `TapReport`: the last report of a `manage.py tap --publish NAME` (playground/tap/cli.py), read by the tap's live
  page beside /inspect/ on whichever host serves it.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import secrets
import unicodedata
from typing import Any

from django.db import models
from django.db.models import Q
from django.utils import timezone

from playground.engine.spec import Profile, parse_profile


def new_slug() -> str:
    # 16 random bytes, URL-safe: stable, shareable and unguessable.
    return secrets.token_urlsafe(16)


def normalise_text(text: str) -> str:
    """What "the same text" means for a content address: line endings and trailing blank space do not count."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n") + "\n"


def text_id(text: str) -> str:
    """The content address of a scenario text: 128 bits of SHA-256 of the normalised text, base32, 26 characters."""
    digest = hashlib.sha256(normalise_text(text).encode("utf-8")).digest()[:16]
    return base64.b32encode(digest).decode("ascii").rstrip("=").lower()


class ScenarioText(models.Model):
    id = models.CharField(primary_key=True, max_length=32, editable=False)
    text = models.TextField()
    # The file's own `id:` slug, for pages and file names (the text is the truth).
    scenario_id = models.CharField(max_length=100, default="")
    # "Save and share" sets it: the text is then reachable at /sc/<id>. Texts only played, never shared, are not.
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"scenario text {self.id} ({self.scenario_id})"

    @classmethod
    def store(cls, text: str, scenario_id: str, *, shared: bool = False) -> ScenarioText:
        """The row for this text, created if new; sharing is never taken back by storing the text again."""
        text = normalise_text(text)
        row, _created = cls.objects.get_or_create(
            id=text_id(text), defaults={"text": text, "scenario_id": scenario_id, "shared": shared}
        )
        if shared and not row.shared:
            cls.objects.filter(pk=row.pk).update(shared=True)
            row.shared = True
        return row


@functools.lru_cache(maxsize=64)
def text_of(text_id: str) -> str:
    """A stored scenario text, read once per process (a session built afresh reads its scenario's: forty attendees
    opening an agenda item's sessions read the same one): its id is its content's address, so it never changes."""
    return str(ScenarioText.objects.values_list("text", flat=True).get(pk=text_id))


class Session(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_slug, editable=False)
    # "" for free play; otherwise the scenario's id, and `source` the exact text it was loaded from.
    scenario_id = models.CharField(max_length=100, blank=True, default="")
    source = models.ForeignKey(ScenarioText, null=True, blank=True, on_delete=models.PROTECT, related_name="sessions")
    backend = models.CharField(max_length=16, default="sim")
    seed = models.IntegerField(default=0)
    # The profile (spec.Profile): which Kafka version and which client. Rows from before profiles: 3.9, librdkafka.
    kafka = models.CharField(max_length=8, default="3.9")
    client = models.CharField(max_length=16, default="librdkafka")
    length = models.PositiveIntegerField(default=0)  # commands in the live log
    version = models.PositiveIntegerField(default=0)
    # The "run" button: a runner applies the remaining scenario steps while this is true ("pause" clears it).
    running = models.BooleanField(default=False)
    # The runner's heartbeat: when a running session's is stale, its process died and another one takes over.
    runner_at = models.DateTimeField(null=True, blank=True)
    # A listener's heartbeat (session/listener.py): while it is fresh, the process named in the log's listen entry
    # serves the session's clients and nobody else appends; stale, that process is gone.
    listener_at = models.DateTimeField(null=True, blank=True)
    # The run's speed: milliseconds between its steps, as the viewer chose it (0: PLAYGROUND_RUN_STEP_MS). Not part
    # of the log: how fast a run went changes nothing in what the session is.
    run_step_ms = models.PositiveIntegerField(default=0)
    # SHA-256 (hex) of the drive capability: whoever presents the secret may act. "" = nobody may (sessions stored
    # before capabilities existed: watch and fork them).
    drive_key = models.CharField(max_length=64, blank=True, default="")
    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
    forked_at = models.PositiveIntegerField(null=True, blank=True)  # the step of `forked_from` it copies up to
    # A keyed hash of the creating client's address: the per-client creation limit, without storing addresses.
    client_key = models.CharField(max_length=64, blank=True, default="", db_index=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The languages its pages have been opened in (",en,zh-hans,"): an update is rendered in these only. A page in
    # another one (it opened as the update was rendered) gets a snapshot instead (consumers.py).
    viewer_langs = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"session {self.id} ({self.scenario_id or 'free play'}, {self.length} commands)"

    @property
    def is_free_play(self) -> bool:
        return not self.scenario_id

    @property
    def profile(self) -> Profile:
        return parse_profile(self.kafka, self.client)

    @profile.setter
    def profile(self, value: Profile) -> None:
        self.kafka, self.client = value.kafka, value.client_key  # java:3.5 names kafka-clients' release

    @property
    def scenario_source(self) -> str:
        if not self.source_id:
            return ""
        return self.source.text if Session.source.is_cached(self) else text_of(self.source_id)

    @property
    def commands(self) -> list[dict[str, Any]]:
        """The live log as entries with their outcomes (the form `log.json` and the tests read)."""
        return [c.as_entry() for c in self.log.filter(dropped=False).order_by("seq")]


class Command(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="log")
    seq = models.PositiveIntegerField()  # position in the log, from 0
    # {"step": <the step in the scenario file's own form>, "n": k (scenario step index) | absent}
    # {"add": {"C": {"producer": {...}}}}: an actor added in free play
    # optional "fenced": [actor names]: producers this command left fenced that were not before
    entry = models.JSONField()
    outcome = models.CharField(max_length=64, default="ok")
    created_at = models.DateTimeField(default=timezone.now)
    dropped = models.BooleanField(default=False)
    # an external clients' entry: what they sent, packed and zlib-compressed (external.pack); None for the others
    payload = models.BinaryField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "seq"], condition=Q(dropped=False), name="one_live_command_per_seq"
            ),
        ]
        indexes = [models.Index(fields=["session", "seq"], name="command_session_seq")]

    def __str__(self) -> str:
        return f"{self.session_id}[{self.seq}]{' (dropped)' if self.dropped else ''}"

    def as_entry(self) -> dict[str, Any]:
        return {**self.entry, "outcome": self.outcome}


class Checkpoint(models.Model):
    """The backend after a session's first `length` log entries, frozen (session/cache.py), with what the session
    derived from them (`state`: a live.Checkpoint as session/checkpoints.py's `pack` writes it: the derived part
    pickled, then the frozen state, zlib-compressed, as it is). `last_row`: the id of the log's row at length - 1
    when it was taken: it is the session's state only while that row is still live (back and reset drop
    rows). `code`: the code that froze it (session/checkpoints.py's fingerprint); another code thaws none of it."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="stored_checkpoints")
    length = models.PositiveIntegerField()
    last_row = models.BigIntegerField()
    code = models.CharField(max_length=64)
    state = models.BinaryField()
    size = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["session", "length"], name="checkpoint_session_length")]

    def __str__(self) -> str:
        return f"{self.session_id} @ {self.length} ({self.size} bytes)"


# ----------------------------------------------------------------------------------------------------- workshops
# Join codes: 6 characters from an alphabet without look-alikes (no I/1/L, O/0), typed case-insensitively.
JOIN_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"


def new_join_code() -> str:
    return "".join(secrets.choice(JOIN_ALPHABET) for _ in range(6))


class Workshop(models.Model):
    """A room: an agenda of scenarios, attendees each with a session per agenda item, and a facilitator who holds the
    room's capability (`room_key`, its SHA-256) and moves the room from item to item."""

    id = models.CharField(primary_key=True, max_length=32, default=new_slug, editable=False)
    code = models.CharField(max_length=6, unique=True, default=new_join_code)
    title = models.CharField(max_length=100)
    # [{"text": ScenarioText id, "id": the scenario's slug, "title": {lang: text}}]: the exact texts, so a room
    # plays what it was made with even after the library changed.
    agenda = models.JSONField()
    current = models.PositiveIntegerField(default=0)  # the agenda item the room is on
    follow = models.BooleanField(default=False)  # "follow me": the facilitator's session on every attendee's page
    # {"<agenda item>": [scenario step, ...]}: questions whose right answer the facilitator showed on the board early
    revealed = models.JSONField(default=dict, blank=True)
    room_key = models.CharField(max_length=64)
    # A keyed hash of the creator's address: sessions made through the room count against it (limits.py).
    client_key = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"workshop {self.code} ({self.title})"


def name_key(name: str) -> str:
    """What makes two display names the same one: compatibility forms, case and accents do not count ("EVE",
    full-width "ｅｖｅ" and "e\u0301ve" are all "eve"), so that nobody joins as a look-alike of someone else."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name).casefold())
    folded = unicodedata.normalize("NFKC", "".join(ch for ch in folded if not unicodedata.combining(ch)))
    return folded if len(folded) <= 64 else "#" + hashlib.sha256(folded.encode()).hexdigest()[:63]


class Attendee(models.Model):
    workshop = models.ForeignKey(Workshop, on_delete=models.CASCADE, related_name="attendees")
    name = models.CharField(max_length=40)  # a display name: no account, no email; escaped wherever shown
    name_key = models.CharField(max_length=64, default="")  # name_key(name): unique in the room
    key = models.CharField(max_length=64)  # SHA-256 of the attendee's secret (their browser's cookie)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workshop", "name_key"], name="one_name_key_per_room")]
        ordering = ["joined_at", "id"]

    def __str__(self) -> str:
        return f"{self.name} in {self.workshop_id}"


class Seat(models.Model):
    """Whose session is which: an attendee's (or, with no attendee, the facilitator's own) session for one agenda
    item."""

    workshop = models.ForeignKey(Workshop, on_delete=models.CASCADE, related_name="seats")
    attendee = models.ForeignKey(Attendee, null=True, blank=True, on_delete=models.CASCADE, related_name="seats")
    item = models.PositiveIntegerField()
    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="seat")

    class Meta:
        # An attendee has one seat per item (the facilitator's own seat, attendee NULL, is kept single in code:
        # NULLs are distinct in a unique constraint on SQLite and on PostgreSQL before 15).
        constraints = [models.UniqueConstraint(fields=["workshop", "attendee", "item"], name="one_seat_per_item")]


# ------------------------------------------------------------------------------------------------------ limits
class Counter(models.Model):
    """A count a limit is checked against (playground/session/limits.py): sessions a client started, wrong join
    codes from an address, a room's attendees. `used` drains at the limit's rate from `stamp` (time.time()) for a
    count over time; the row may go once `expires` (time.time()) has passed, as an empty one is a missing one."""

    bucket = models.CharField(max_length=200, unique=True)  # "<limit>:<who>", who a keyed hash, a room id or ""
    used = models.FloatField(default=0.0)
    stamp = models.FloatField()
    expires = models.FloatField(null=True, blank=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.bucket}: {self.used:.2f}"


class CommandAnswer(models.Model):
    """The answer to a command sent with an Idempotency-Key: the same key again, in the same session, gets this
    answer and changes nothing. `status` 0: the first request is still being carried out."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="answers")
    key = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField(default=0)
    body = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "key"], name="one_answer_per_key")]

    def __str__(self) -> str:
        return f"{self.session_id} {self.key}: {self.status}"


class Compared(models.Model):
    """A comparison of two profiles (playground/session/compare/kept.py), computed once and kept here so that every
    server process shows it again without running it: `key` names what was run (a scenario text's content address,
    or a session's log at a version), the pair of profiles and the bounds it ran under; `body` is the comparison,
    zlib-compressed JSON. The least recently shown go past the `compares_kept` bound."""

    key = models.CharField(primary_key=True, max_length=64)
    body = models.BinaryField()
    used_at = models.FloatField(db_index=True)  # time.time() it was last shown (touched at most once a minute)

    def __str__(self) -> str:
        return f"comparison {self.key[:12]} ({len(self.body)} bytes)"


# ----------------------------------------------------------------------------------------------------- the tap
class TapReport(models.Model):
    """A tap's last report, one row per tap name, written again every few seconds while the tap runs."""

    name = models.CharField(primary_key=True, max_length=200)
    report = models.JSONField()
    reported_at = models.DateTimeField(default=timezone.now, db_index=True)

    SHOWN_MAX = 20  # the taps the page lists, latest first

    @classmethod
    def publish(cls, name: str, report: dict[str, Any]) -> None:
        as_written = json.loads(json.dumps(report, default=str))  # as the file has it (cli.write_report)
        cls.objects.update_or_create(name=name, defaults={"report": as_written, "reported_at": timezone.now()})

    @classmethod
    def latest(cls) -> list[tuple[str, Any]]:
        """(name, reported_at) of the taps last heard from, latest first."""
        return list(cls.objects.order_by("-reported_at").values_list("name", "reported_at")[: cls.SHOWN_MAX])
