"""Finding endpoints by what they do: the text of an endpoint and its ranking."""
