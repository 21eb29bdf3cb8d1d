"""The bottom wing: machine primitives every other wing stands on (the kernel's tools, namespace
entry, the state dir, signal handlers, the capability probe, the terminal). Imports no wing."""
