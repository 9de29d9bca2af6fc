"""A tap's report stored where the live page reads it from any host (`manage.py tap --publish NAME`, issue 34)."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("playground", "0012_stored_checkpoints")]

    operations = [
        migrations.CreateModel(
            name="TapReport",
            fields=[
                ("name", models.CharField(max_length=200, primary_key=True, serialize=False)),
                ("report", models.JSONField()),
                ("reported_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
            ],
        ),
    ]
