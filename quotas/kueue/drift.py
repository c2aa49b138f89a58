"""Drift of a live Kueue object from the compiled one, judged on the fields gpuplatform sets.

Server-side apply makes gpuplatform the owner of exactly the fields it sends, so those are the
ones to compare: a field someone else added (a label, a field we leave unset) is theirs, not drift;
a field of ours changed by hand is. Defaults the API server filled into list items we send are not
drift either: only the keys we send are compared, and a list of ours must keep its length.
"""

from __future__ import annotations

from typing import Any

# Metadata the API server owns or that others may add; of ours only the labels are compared.
COMPARED_METADATA = ("labels",)


def drifted_fields(
    *, wanted: dict[str, Any], live: dict[str, Any], last: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Every path of ``wanted`` (spec, and our labels) whose live value differs, with both values,
    sorted by path; [] when the live object carries everything we set.

    With ``last`` (what the previous apply sent), a difference is drift only where the live object no
    longer holds what we sent then: a nominal quota we raised from 4 to 6 since (a capacity request
    admitted, a quota edited) is a change of ours, not a hand edit."""
    found = _differences(wanted, live)
    if last is None:
        return found
    edited = [d["path"] for d in _differences(last, live)]
    return [d for d in found if any(_related(d["path"], path) for path in edited)]


def _related(one: str, other: str) -> bool:
    """One path is the other or lies inside it (a list whose length changed holds its items)."""
    return (
        one == other or one.startswith((other + ".", other + "[")) or other.startswith((one + ".", one + "["))
    )


def _differences(wanted: dict[str, Any], live: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for key, value in wanted.items():
        if key in ("apiVersion", "kind", "status"):
            continue
        if key == "metadata":
            for part in COMPARED_METADATA:
                if part in value:
                    _compare(value[part], (live.get("metadata") or {}).get(part), f"metadata.{part}", found)
            continue
        _compare(value, live.get(key), key, found)
    return sorted(found, key=lambda d: d["path"])


def _compare(wanted: Any, live: Any, path: str, found: list[dict[str, Any]]) -> None:
    if isinstance(wanted, dict):
        if not isinstance(live, dict):
            found.append({"path": path, "live": live, "wanted": wanted})
            return
        for key, value in wanted.items():
            _compare(value, live.get(key), f"{path}.{key}", found)
    elif isinstance(wanted, list):
        if not isinstance(live, list) or len(live) != len(wanted):
            found.append({"path": path, "live": live, "wanted": wanted})
            return
        for index, (w, v) in enumerate(zip(wanted, live, strict=True)):
            _compare(w, v, f"{path}[{index}]", found)
    elif not _same(wanted, live):
        found.append({"path": path, "live": live, "wanted": wanted})


def _same(wanted: Any, live: Any) -> bool:
    # Quantities come back as the server wrote them ("4" for 4): compare their text.
    if isinstance(wanted, bool) or isinstance(live, bool):
        return bool(wanted is live)
    return str(wanted) == str(live) if live is not None else wanted is None
