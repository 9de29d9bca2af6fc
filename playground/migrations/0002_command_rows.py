"""A session's log, one row per command; scenario texts content-addressed; capabilities and forks (schema).

The new tables and fields; 0003 moves the old sessions' data into them and 0004 drops the old fields.
"""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):

    dependencies = [
        ("playground", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="ScenarioText",
            fields=[
                ("id", models.CharField(editable=False, max_length=32, primary_key=True, serialize=False)),
                ("text", models.TextField()),
                ("scenario_id", models.CharField(default="", max_length=100)),
                ("shared", models.BooleanField(default=False)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
        migrations.AddField(
            model_name="session",
            name="source",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="sessions", to="playground.scenariotext"),
        ),
        migrations.AddField(
            model_name="session",
            name="length",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="session",
            name="drive_key",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="session",
            name="forked_from",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="forks", to="playground.session"),
        ),
        migrations.AddField(
            model_name="session",
            name="forked_at",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name="Command",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("seq", models.PositiveIntegerField()),
                ("entry", models.JSONField()),
                ("outcome", models.CharField(default="ok", max_length=64)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("dropped", models.BooleanField(default=False)),
                ("session", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="log",
                                              to="playground.session")),
            ],
            options={
                "indexes": [models.Index(fields=["session", "seq"], name="command_session_seq")],
                "constraints": [models.UniqueConstraint(condition=Q(("dropped", False)), fields=("session", "seq"),
                                                        name="one_live_command_per_seq")],
            },
        ),
    ]
