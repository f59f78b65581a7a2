"""Settings split by environment: ``base`` (local default), ``production``, ``test``."""
