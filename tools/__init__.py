"""LangChain tools the agents call."""
