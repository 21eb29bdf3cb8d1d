"""`make demo`: the default heavy-burst run for dblp, optireduce and tcp (not built yet)."""

print("make demo: the end-to-end run is not built yet (issue: end-to-end runs).")
