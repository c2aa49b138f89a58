"""The Kueue enforcement backend's pure part: the quota tree compiled into Kueue's own objects.

``compile_cluster`` (compile.py) takes the records of ``model.py`` and returns plain dicts;
``render.py`` gives their byte-stable text. No Django here (import-linter's pure-domain contract).
"""
