"""Pages: thin glue between a request, one service or selector, and a template."""
