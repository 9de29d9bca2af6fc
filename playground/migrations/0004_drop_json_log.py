"""The JSON log and the inline scenario text are gone: 0003 moved them into rows."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("playground", "0003_move_commands"),
    ]

    operations = [
        migrations.RemoveField(model_name="session", name="commands"),
        migrations.RemoveField(model_name="session", name="scenario_source"),
    ]
