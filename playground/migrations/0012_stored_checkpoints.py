"""Sessions stored for opening anywhere at once (issue 30): external clients' requests move out of the log's JSON into
the row's `payload` (bytes, read only when the row is replayed: a session's log no longer holds them in memory), and
the simulator's checkpoints are stored with the log (session/checkpoints.py); a listener beats (Session.listener_at),
so that another process knows soon when the one serving a session's clients is gone."""

import base64

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def move_payloads(apps, schema_editor):
    """An ext entry's "in" (its packed inputs, zlib then base64) becomes the row's payload (the zlib bytes)."""
    Command = apps.get_model("playground", "Command")
    rows = Command.objects.filter(entry__has_key="ext").only("id", "entry")
    for row in rows.iterator(chunk_size=200):
        body = row.entry.get("ext")
        if not isinstance(body, dict) or "in" not in body:
            continue
        payload = base64.b64decode(body.pop("in"))
        body.setdefault("size", len(payload))
        Command.objects.filter(pk=row.pk).update(entry=row.entry, payload=payload)


def restore_payloads(apps, schema_editor):
    Command = apps.get_model("playground", "Command")
    for row in Command.objects.filter(payload__isnull=False).only("id", "entry", "payload").iterator(chunk_size=200):
        row.entry["ext"]["in"] = base64.b64encode(bytes(row.payload)).decode("ascii")
        Command.objects.filter(pk=row.pk).update(entry=row.entry, payload=None)


class Migration(migrations.Migration):

    dependencies = [
        ('playground', '0011_compared'),
    ]

    operations = [
        migrations.AddField(
            model_name='session',
            name='listener_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='command',
            name='payload',
            field=models.BinaryField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name='Checkpoint',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('length', models.PositiveIntegerField()),
                ('last_row', models.BigIntegerField()),
                ('code', models.CharField(max_length=64)),
                ('state', models.BinaryField()),
                ('size', models.PositiveIntegerField(default=0)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='stored_checkpoints', to='playground.session')),
            ],
            options={
                'indexes': [models.Index(fields=['session', 'length'], name='checkpoint_session_length')],
            },
        ),
        migrations.RunPython(move_payloads, restore_payloads),
    ]
