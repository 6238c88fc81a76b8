//! The LLM providers: OpenAI-compatible, Ollama native, replay, and the health probe.
