"""The ``mirrorflow`` command line."""
