"""The Django app: experiments, their runs on Celery workers, and the stored results."""
