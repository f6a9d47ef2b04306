"""Search adapters: the embedders (decision 0033)."""
