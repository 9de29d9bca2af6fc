from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    name = "playground"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The layers below the web announce what happened (signals); the web layer shows it live.
        from playground.web import receivers

        receivers.connect()
