"""Live conversations with a companion model behind an OpenAI-compatible endpoint (issue 20)."""
