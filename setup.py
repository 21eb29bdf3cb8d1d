"""Only what pyproject.toml cannot say: cffi compiles the transport's receive fast path
(workloads/transport/fastpath.c) when the package is installed."""

from setuptools import setup

setup(cffi_modules=["workloads/transport/fastpath_build.py:ffibuilder"])
