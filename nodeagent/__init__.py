"""The gpuplatform node agent: plain Python, no Django (docs/agents.md, docs/agent-protocol.md)."""

__version__ = "0.1.0"
