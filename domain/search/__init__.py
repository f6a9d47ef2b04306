"""The domain's search: search."""
