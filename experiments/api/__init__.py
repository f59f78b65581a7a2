"""The REST API (``/api/v1/``): thin views over the same services and selectors as the
pages, with one error shape, token or session authentication and streamed exports."""
