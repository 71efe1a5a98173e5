"""The one error family of olakit. Every message says what is wrong, where, and what to do."""


class OlakitError(Exception):
    """Base of every error olakit raises on purpose."""


class DataError(OlakitError):
    """A data file is missing, malformed or inconsistent (the message names file and line)."""


class UnknownNameError(OlakitError, KeyError):
    """A name looked up in a registry (extractor, tie rule, ...) does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def lookup(registry: dict, name: str, what: str):
    """Return ``registry[name]`` or raise UnknownNameError listing the known names.

    >>> lookup({"a": 1}, "a", "extractor")
    1
    """
    try:
        return registry[name]
    except KeyError:
        known = ", ".join(sorted(registry))
        raise UnknownNameError(f"unknown {what} {name!r}; known: {known}") from None


class MissingExtra(OlakitError, ImportError):
    """A feature needs a package of one of olakit's extras that is not installed."""


def require_extra(module: str, extra: str, what: str):
    """``importlib.import_module(module)``, or MissingExtra naming the extra that brings it.

    >>> require_extra("json", "live", "JSON").__name__
    'json'
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(
            f"{what} needs {module}, which olakit's {extra!r} extra installs: pip install 'olakit[{extra}]'"
        ) from None
