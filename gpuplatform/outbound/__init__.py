"""The outbound-URL policy (``policy``, pure), the session that applies it at connect time
(``session``) and the settings-bound helpers the apps call (``configured``). Importing this package
loads none of them."""
