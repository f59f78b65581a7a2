"""API endpoints: validate → one service or selector → serialize."""
