"""Thin entry point: the package's metadata lives in pyproject.toml."""

from setuptools import setup

setup()
