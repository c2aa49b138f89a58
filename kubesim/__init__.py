"""kubesim: a Kubernetes API server simulator for tests, benchmarks and the demo.

Pure Python; imports nothing of the rest of the project. See docs/kubesim.md.
"""

from kubesim.errors import ApiError
from kubesim.sim import Sim, start
from kubesim.store import Store

__all__ = ["ApiError", "Sim", "Store", "start"]
