from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    name = "experiments"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Disruption experiments"

    def ready(self) -> None:
        """A deleted run takes its stored exports with it, however it was deleted (the
        experiment's delete, the admin, a user's cascade)."""
        from django.db.models.signals import post_delete

        from experiments.models import Run
        from experiments.services.exports import run_deleted

        post_delete.connect(run_deleted, sender=Run, dispatch_uid="run-files-remove")
