"""Benchmarks: measurements that need root and a live network, printed as tables.

Tests assert behaviour; how fast or how close a thing is belongs here, where a figure is
reported rather than judged. Run one from the repository root, one at a time, under the
shared lock (the machine has one network namespace set):

    flock /tmp/dblp-net.lock .venv/bin/python -m benchmarks.<module> --help
"""
