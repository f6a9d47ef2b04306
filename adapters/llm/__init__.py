"""LLM clients: the OpenAI chat-completions protocol against any compatible server."""
