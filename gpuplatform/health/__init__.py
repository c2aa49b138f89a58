"""Health: /healthz and /readyz (checks.py), and the background loops' heartbeats (heartbeats.py).

A loop records when it last succeeded with ``beat``; pages, /readyz and the overview judge it from
that time, never from a flag a dead loop leaves behind (DESIGN §6)."""
