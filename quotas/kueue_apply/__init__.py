"""The ``kueue`` backend's cluster side: read the catalogue into the compiler's input
(selectors.py), apply the compiled objects and keep them true (service.py), and queue that apply
after every change to the catalogue (triggers.py). docs/kueue.md."""
