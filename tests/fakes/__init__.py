"""Test doubles that speak real protocols (an OpenAI chat-completions server on loopback)."""
