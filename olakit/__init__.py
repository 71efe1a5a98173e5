"""olakit: reproduce and extend OlaGPT (thinking templates, retrieved notes, voting).

Importing the package is cheap: heavy libraries load inside the functions that need them.
"""

from olakit.errors import OlakitError

__version__ = "0.1.0"
__all__ = ["OlakitError", "__version__"]
