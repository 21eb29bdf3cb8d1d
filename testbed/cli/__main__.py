"""`python -m testbed.cli`: the same app as the `testbed` script."""

from testbed.cli import app

app()
