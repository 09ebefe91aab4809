"""The package version, in a module of its own so every stage can name it without importing the package facade."""

__version__ = "0.1.0"
