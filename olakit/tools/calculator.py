"""The calculator tool: exact arithmetic over integers, fractions and decimals, text in and text out.

    calculate("1/3 + 1/6")          # '0.5' (a half has a finite decimal)
    calculate("0.1 + 0.2")          # '0.3' (exact: each number is read as the decimal it is written as)
    calculate("2/3")                # '2/3 (0.666666666667)'
    calculate("sqrt(2) * 3")        # '4.24264068712' (an irrational step is a float from there on)

The expression is parsed and evaluated by simpleeval (1.0, MIT; pypi.org/project/simpleeval), a small evaluator over
Python's own ``ast`` that has been kept since 2013: it evaluates only the nodes, operators, names and functions it is
given and caps the size of powers, so no model-written text is ever run as Python. olakit gives it:
- numbers read from their text as exact fractions (``0.1`` is 1/10, not the nearest binary float);
- ``+ - * / // % **`` and unary signs; ``/`` is exact division; a power with an integer exponent is exact (exponents
  up to 10,000, results up to 4,000 digits), any other is a float;
- ``sqrt`` (exact for squares of fractions), ``abs``, ``round``, ``min``, ``max``, ``floor``, ``ceil``,
  ``factorial`` and ``comb``/``perm`` (integers up to 10,000), ``gcd``, ``lcm``, ``log`` (natural, or to a base),
  ``log10``, ``log2``, ``exp``, ``sin``, ``cos``, ``tan`` (radians), ``radians``, ``degrees``; ``pi`` and ``e``.
Before parsing, each a stated rule (``normalise``): thousands separators (``40,000``), currency signs (``$300``) and
a closing ``=`` are dropped; ``^`` is a power, as on a calculator; ``×``, ``·``, ``÷`` and ``−`` are ``*``, ``/`` and
``-``; ``N%`` is ``N/100`` where no operand follows (``7 % 3`` stays a remainder).
The answer: an integer as itself; a fraction with a finite decimal as that decimal; any other fraction as
``p/q (decimal)`` to 12 significant digits; a float to 12 significant digits.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from fractions import Fraction

from simpleeval import InvalidExpression, SimpleEval

from olakit.tools.errors import ToolError

MAX_EXPONENT = 10_000
MAX_DIGITS = 4_000
"""The most digits a number's numerator or denominator may have (below Python's 4,300-digit limit for showing an
integer as text)."""
_MAX_BITS = math.ceil(MAX_DIGITS * math.log2(10))
MAX_LENGTH = 2_000

NORMALISE = (
    ("thousands", re.compile(r"(?<=\d),(?=\d{3}(?!\d))"), ""),
    ("currency", re.compile(r"[$€£¥]"), ""),
    ("closing =", re.compile(r"=\s*\??\s*$"), ""),
    ("power ^", re.compile(r"\^"), "**"),
    ("times", re.compile(r"[×·]"), "*"),
    ("divide", re.compile(r"÷"), "/"),
    ("minus", re.compile(r"[−–]"), "-"),
    ("percent", re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*%(?!\s*[\w(.])"), r"(\1/100)"),
)
"""Each rewrite of the text before it is parsed: its name, the pattern and its replacement."""


def normalise(text: str) -> str:
    """The expression as the evaluator reads it (the rules above, in order)."""
    for _, pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    return text.strip()


def _check(value):
    if isinstance(value, Fraction) and max(value.numerator.bit_length(), value.denominator.bit_length()) > _MAX_BITS:
        raise ToolError(f"calculator: a number past {MAX_DIGITS} digits")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("calculator: the result is not a finite number")
    return value


def _power(base, exponent):
    if isinstance(exponent, Fraction) and exponent.denominator == 1:
        if abs(exponent) > MAX_EXPONENT:
            raise ToolError(f"calculator: an exponent past {MAX_EXPONENT}")
        if base == 0 and exponent < 0:
            raise ToolError("calculator: 0 to a negative power")
        if isinstance(base, Fraction):
            return _check(base ** int(exponent))
    try:
        result = float(base) ** float(exponent)
    except OverflowError:
        raise ToolError("calculator: the power is too large") from None
    if isinstance(result, complex):
        raise ToolError("calculator: a negative number to a fractional power has no real value")
    return _check(result)


def _divide(a, b):
    if b == 0:
        raise ToolError("calculator: division by zero")
    return _check(a / b)


def _floordiv(a, b):
    if b == 0:
        raise ToolError("calculator: division by zero")
    return Fraction(a // b) if isinstance(a, Fraction) and isinstance(b, Fraction) else a // b


def _mod(a, b):
    if b == 0:
        raise ToolError("calculator: modulo by zero")
    return a % b


def _sqrt(x):
    if x < 0:
        raise ToolError("calculator: the square root of a negative number")
    if isinstance(x, Fraction):
        n, d = math.isqrt(x.numerator), math.isqrt(x.denominator)
        if n * n == x.numerator and d * d == x.denominator:
            return Fraction(n, d)
    return math.sqrt(x)


def _integer(name):
    def f(*args):
        if not all(isinstance(a, Fraction) and a.denominator == 1 and 0 <= a <= MAX_EXPONENT for a in args):
            raise ToolError(f"calculator: {name} takes whole numbers from 0 to {MAX_EXPONENT}")
        return _check(Fraction(getattr(math, name)(*map(int, args))))

    return f


def _whole(name):
    def f(*args):
        if not all(isinstance(a, Fraction) and a.denominator == 1 for a in args):
            raise ToolError(f"calculator: {name} takes whole numbers")
        return Fraction(getattr(math, name)(*map(int, args)))

    return f


def _log(x, base=None):
    if x <= 0 or (base is not None and (base <= 0 or base == 1)):
        raise ToolError("calculator: log takes a positive number (and a positive base other than 1)")
    return math.log(x) if base is None else math.log(x, base)


def _real(f):
    def g(*args):
        try:
            return _check(f(*map(float, args)))
        except (OverflowError, ValueError) as exc:
            raise ToolError(f"calculator: {f.__name__}: {exc}") from None

    return g


def _round(x, places=Fraction(0)):
    if not (isinstance(places, Fraction) and places.denominator == 1):
        raise ToolError("calculator: round's places must be a whole number")
    result = round(x, int(places))
    return Fraction(result) if isinstance(result, int) else result


def _rounding(f):
    return lambda x: Fraction(f(x))


OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: _divide,
    ast.FloorDiv: _floordiv,
    ast.Mod: _mod,
    ast.Pow: _power,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
FUNCTIONS = {
    "sqrt": _sqrt,
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "floor": _rounding(math.floor),
    "ceil": _rounding(math.ceil),
    "factorial": _integer("factorial"),
    "comb": _integer("comb"),
    "perm": _integer("perm"),
    "gcd": _whole("gcd"),
    "lcm": _whole("lcm"),
    "log": _log,
    "log10": lambda x: _log(x, 10),
    "log2": lambda x: _log(x, 2),
    "exp": _real(math.exp),
    "sin": _real(math.sin),
    "cos": _real(math.cos),
    "tan": _real(math.tan),
    "radians": _real(math.radians),
    "degrees": _real(math.degrees),
}
NAMES = {"pi": math.pi, "e": math.e}


class Exact(SimpleEval):
    """simpleeval with exact numbers and arithmetic nodes only (no names assigned, no attributes, no strings)."""

    KEEP = (ast.Expr, ast.Name, ast.UnaryOp, ast.BinOp, ast.Call, ast.Constant)

    def __init__(self):
        super().__init__(operators=OPERATORS, functions=FUNCTIONS, names=NAMES)
        self.nodes = {node: handler for node, handler in self.nodes.items() if node in self.KEEP}
        self.nodes[ast.Constant] = self._exact

    def _exact(self, node):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ToolError(f"calculator: {node.value!r} is not a number")
        return _check(Fraction(ast.get_source_segment(self.expr, node).replace("_", "")))  # as written: exact


def evaluate(expression: str):
    """The value of ``expression`` (a Fraction, or a float after an irrational step); ToolError saying what is
    wrong. Each call makes its own evaluator (microseconds: one shared would keep the state of its last call)."""
    if len(expression) > MAX_LENGTH:
        raise ToolError(f"calculator: an expression of at most {MAX_LENGTH} characters")
    text = normalise(expression)
    if not text:
        raise ToolError("calculator: no expression given")
    try:
        value = Exact().eval(text)
    except ToolError:
        raise
    except SyntaxError as exc:
        raise ToolError(f"calculator: {text!r} is not an expression ({exc.msg})") from None
    except InvalidExpression as exc:
        raise ToolError(f"calculator: {exc}") from None
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
        raise ToolError(f"calculator: {exc}") from None
    if not isinstance(value, (Fraction, float)):
        raise ToolError(f"calculator: {text!r} is not a number")
    return _check(value)


def _finite_decimal(q: Fraction) -> str | None:
    d, twos, fives = q.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return None
    places = max(twos, fives)
    scaled = abs(q.numerator) * (10**places // q.denominator)
    digits = str(scaled).rjust(places + 1, "0")
    whole, frac = digits[: len(digits) - places], digits[len(digits) - places :]
    return ("-" if q < 0 else "") + whole + ("." + frac.rstrip("0") if frac.rstrip("0") else "")


def show(value) -> str:
    """A value as the calculator answers: '12', '1.75', '2/3 (0.666666666667)', '1.41421356237'."""
    if isinstance(value, float):
        return f"{value:.12g}"
    if value.denominator == 1:
        return str(value.numerator)
    decimal = _finite_decimal(value)
    if decimal is not None and len(decimal) <= 40:
        return decimal
    return f"{value.numerator}/{value.denominator} ({float(value):.12g})"


def calculate(expression: str) -> str:
    """The calculator tool: the value of an arithmetic expression, as text."""
    return show(evaluate(expression))
