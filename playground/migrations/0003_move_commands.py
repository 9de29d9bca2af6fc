"""Old sessions' logs into rows (data).

Sessions stored before this migration kept their whole log in one JSON field (`commands`) and their scenario's
text in `scenario_source`. The data step moves each entry into a `Command` row (same order, same outcome) and each
text into a `ScenarioText` row; 0004 drops both fields. Those sessions get no drive capability (nobody held one):
they can be watched and forked. The reverse step rebuilds the JSON field from the live rows.
"""

import base64
import hashlib

from django.db import migrations


def _normalise(text):
    # A copy of playground.models.normalise_text as it is at this migration (migrations must not follow the code).
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n") + "\n"


def _text_id(text):
    digest = hashlib.sha256(_normalise(text).encode("utf-8")).digest()[:16]
    return base64.b32encode(digest).decode("ascii").rstrip("=").lower()


def forwards(apps, schema_editor):
    Session = apps.get_model("playground", "Session")
    Command = apps.get_model("playground", "Command")
    ScenarioText = apps.get_model("playground", "ScenarioText")
    for row in Session.objects.all().iterator(chunk_size=200):
        if row.scenario_source:
            text = _normalise(row.scenario_source)
            source, _created = ScenarioText.objects.get_or_create(
                id=_text_id(text), defaults={"text": text, "scenario_id": row.scenario_id})
            row.source = source
        commands = list(row.commands or [])
        Command.objects.bulk_create(
            [Command(session=row, seq=i, entry={k: v for k, v in entry.items() if k != "outcome"},
                     outcome=str(entry.get("outcome") or "ok"), created_at=row.updated_at)
             for i, entry in enumerate(commands)],
            batch_size=500,
        )
        row.length = len(commands)
        row.save(update_fields=["source", "length"])


def backwards(apps, schema_editor):
    Session = apps.get_model("playground", "Session")
    Command = apps.get_model("playground", "Command")
    for row in Session.objects.all().iterator(chunk_size=200):
        rows = Command.objects.filter(session=row, dropped=False).order_by("seq")
        row.commands = [{**c.entry, "outcome": c.outcome} for c in rows]
        row.scenario_source = row.source.text if row.source_id else ""
        row.save(update_fields=["commands", "scenario_source"])


class Migration(migrations.Migration):
    # Its own migration: on PostgreSQL, rows written with deferred foreign-key checks pending cannot be followed by
    # ALTER TABLE in the same transaction ("pending trigger events"), so the fields are dropped in 0004.

    dependencies = [
        ("playground", "0002_command_rows"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
