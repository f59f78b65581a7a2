"""Model fields of our own."""

from __future__ import annotations

import json
import zlib
from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

LEVEL = 1
"""zlib's fastest level: a 2 MB timeline in ~8 ms to ~290 KB (level 6: 25 ms, 230 KB)."""


def json_blob(value: Any) -> bytes:
    """``value`` as compact JSON, compressed."""
    return zlib.compress(json.dumps(value, separators=(",", ":")).encode(), LEVEL)


def json_from_blob(blob: bytes | bytearray | memoryview) -> Any:
    return json.loads(zlib.decompress(blob))


class CompressedJSONField(models.BinaryField):
    """A JSON value stored as one zlib-compressed blob, read back as the value.

    For columns written once and read whole, never queried into: a replication's
    timeline (2 MB of JSON on the openb trace) and decision records. As ``jsonb`` the
    database parsed every byte of them on the write (96 ms of PostgreSQL's time per openb
    task, on top of compressing them again) and printed them back as text on every read;
    as a blob it stores and returns bytes, the worker compresses in ~8 ms and a read
    decompresses in ~3 ms. What a query needs out of one of them is a column of its own
    (``Replication.timeline_costs``)."""

    description = "JSON stored as a zlib-compressed blob"
    # The attribute holds the JSON value, not bytes: typed for django-stubs' plugin,
    # which would otherwise give it a BinaryField's type.
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def from_db_value(self, value: Any, expression: Any, connection: BaseDatabaseWrapper) -> Any:
        return None if value is None else json_from_blob(value)

    def to_python(self, value: Any) -> Any:
        """The value from a blob, or from the JSON text :meth:`value_to_string` wrote
        (``loaddata``). Every value stored here is an object or a list, never a string."""
        if isinstance(value, bytes | bytearray | memoryview):
            return json_from_blob(value)
        if isinstance(value, str):
            return json.loads(value)
        return value

    def get_db_prep_value(
        self, value: Any, connection: BaseDatabaseWrapper, prepared: bool = False
    ) -> Any:
        if value is None:
            return None
        return super().get_db_prep_value(json_blob(value), connection, prepared)

    def value_to_string(self, obj: models.Model) -> str:
        """As JSON (``dumpdata``), not the base64 of the blob."""
        return json.dumps(self.value_from_object(obj))
