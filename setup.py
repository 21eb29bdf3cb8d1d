"""Only what pyproject.toml cannot say: cffi compiles the transport's receive fast path
(workloads/transport/rx.c) when the package is installed."""

from setuptools import setup

setup(cffi_modules=["workloads/transport/rx_build.py:ffibuilder"])
