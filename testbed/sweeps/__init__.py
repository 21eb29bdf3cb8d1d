"""Many runs: sweep plans and their resumable runner, and the scripted sweeps (`bench`, `demo`,
`reproduce`, each `python -m testbed.sweeps.<name>`). Imports `run` and below."""
