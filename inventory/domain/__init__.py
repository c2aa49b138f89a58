"""Pure parsers of what the cluster reports (GPU Feature Discovery labels, HAMi annotations, DRA
slices and claims) and GPU-equivalent weights: plain data in, dataclasses out, no Django."""
