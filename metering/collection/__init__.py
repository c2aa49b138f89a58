"""Pure parts of usage collection (no Django): per-cluster metric names and labels, what a usage
source returns for one hour, and how those readings become per-share usage lines."""
