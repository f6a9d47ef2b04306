"""The domain's access: access, tokens, secrets, audit."""
