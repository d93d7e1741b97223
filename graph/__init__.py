"""LangGraph state, graphs, nodes, model factory, offline model, run callbacks."""
