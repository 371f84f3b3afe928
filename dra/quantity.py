"""Kubernetes `resource.Quantity`: exact parsing, arithmetic, comparison and canonical printing.

The behaviour follows `k8s.io/apimachinery/pkg/api/resource` (quantity.go, amount.go, math.go, suffix.go) fact for
fact, including its two internal forms (a scaled int64 and an arbitrary-precision decimal), because `AsInt64` and
so CEL's `isInteger()`/`asInteger()` depend on which form a value is in. Values are decimals `mantissa * 10**exp`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

from dra.errors import QuantityError

if TYPE_CHECKING:  # pydantic asks for the schema when a model with a Quantity field is built; nothing else needs it
    from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import core_schema

__all__ = ["Format", "Quantity"]

Format = Literal["DecimalSI", "BinarySI", "DecimalExponent"]

_MAX_INT64 = (1 << 63) - 1
_MIN_INT64 = -(1 << 63)
_NANO = -9
# Largest decimal exponent gpudra accepts; Kubernetes accepts any int32 exponent, but a value of 10**(2**31)
# cannot be materialised. No real quantity comes near this.
_MAX_EXPONENT = 1000

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_ERR_FORMAT = f"quantities must match the regular expression '{_SPLIT_RE}'"
_ERR_NUMERIC = "unable to parse numeric part of quantity"
_ERR_SUFFIX = "unable to parse quantity's suffix"

_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
# suffix -> (base, exponent, format), as suffix.go's tables.
_SUFFIXES: dict[str, tuple[int, int, Format]] = {
    "": (10, 0, "DecimalSI"),
    "n": (10, -9, "DecimalSI"),
    "u": (10, -6, "DecimalSI"),
    "m": (10, -3, "DecimalSI"),
    "k": (10, 3, "DecimalSI"),
    "M": (10, 6, "DecimalSI"),
    "G": (10, 9, "DecimalSI"),
    "T": (10, 12, "DecimalSI"),
    "P": (10, 15, "DecimalSI"),
    "E": (10, 18, "DecimalSI"),
    "Ki": (2, 10, "BinarySI"),
    "Mi": (2, 20, "BinarySI"),
    "Gi": (2, 30, "BinarySI"),
    "Ti": (2, 40, "BinarySI"),
    "Pi": (2, 50, "BinarySI"),
    "Ei": (2, 60, "BinarySI"),
}
_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_FORMATS = ("DecimalSI", "BinarySI", "DecimalExponent")


_POW10 = tuple(10**i for i in range(64))


def _p10(n: int) -> int:
    """10**n for n >= 0, from a table for the common small exponents."""
    return _POW10[n] if n < 64 else int(10**n)


def _fits_int64(n: int) -> bool:
    return _MIN_INT64 <= n <= _MAX_INT64


def _wrap_int32(n: int) -> int:
    return (n + (1 << 31)) % (1 << 32) - (1 << 31)


class _Scan:
    """The pieces `parseQuantityString` extracts: sign, numerator and fraction digits, suffix."""

    __slots__ = ("denom", "has_digit", "num", "positive", "suffix")

    def __init__(self, positive: bool, num: str, denom: str, suffix: str, has_digit: bool) -> None:
        self.positive = positive
        self.num = num
        self.denom = denom
        self.suffix = suffix
        self.has_digit = has_digit


def _scan(text: str) -> _Scan:
    end = len(text)
    pos = 0
    positive = True
    if end and text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    zeros_start = pos
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return _Scan(positive, "0", "", "", pos > zeros_start)
    has_digit = pos > zeros_start
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    has_digit = has_digit or pos > start
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        has_digit = has_digit or pos > start
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(f"invalid quantity {text!r}: {_ERR_FORMAT}")
    return _Scan(positive, num, denom, text[suffix_start:], has_digit)


def _interpret_suffix(text: str, suffix: str) -> tuple[int, int, Format]:
    known = _SUFFIXES.get(suffix)
    if known is not None:
        return known
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body and all(c in _DIGITS for c in body):
            value = int(digits)
            if _fits_int64(value):
                return 10, _wrap_int32(value), "DecimalExponent"
    raise QuantityError(f"invalid quantity {text!r}: {_ERR_SUFFIX}")


def _round_to_nano(mant: int, exp: int) -> tuple[int, int]:
    """inf.Dec Round(scale 9, RoundUp): away from zero, result at exponent -9."""
    if exp >= _NANO:
        return mant * _p10(exp - _NANO), _NANO
    drop = _NANO - exp
    magnitude = abs(mant)
    if drop > len(str(magnitude)):
        return (1 if mant > 0 else -1), _NANO
    quotient, remainder = divmod(magnitude, _p10(drop))
    if remainder:
        quotient += 1
    return (quotient if mant > 0 else -quotient), _NANO


def _strip_tens(mant: int) -> tuple[int, int]:
    times = 0
    while mant and mant % 10 == 0:
        mant //= 10
        times += 1
    return mant, times


# Quantities are immutable, and the same few strings recur in every slice and claim: parse each once. Only short
# texts are kept (a pod's annotation may hold a 256 KiB quantity of leading zeros), so the memo's bytes are bounded.
_PARSED: dict[str, Quantity] = {}
_PARSED_MAX = 4096
_PARSED_TEXT_MAX = 64


class Quantity:
    """An immutable Kubernetes quantity (`resource.Quantity`); compares and hashes by numeric value.

    `str(q)` is what `Quantity.String()` prints: the canonical form, or the input text when apimachinery keeps it
    (an already-canonical string such as `"100e3"`, `"1Ki"`; also `"+1"` and `"1.500"`, which it keeps verbatim).
    """

    __slots__ = ("_dec", "_exp", "_format", "_hash", "_mant", "_str")

    cel_type_name = "kubernetes.Quantity"

    _mant: int
    _exp: int
    _dec: bool
    _format: Format
    _str: str | None
    _hash: int | None

    def __new__(cls, text: str | Quantity) -> Quantity:
        if isinstance(text, Quantity):
            return text
        return cls.parse(text)

    @classmethod
    def _make(cls, mant: int, exp: int, dec: bool, fmt: Format, text: str | None = None) -> Quantity:
        q = object.__new__(cls)
        q._mant = mant
        q._exp = exp
        q._dec = dec
        q._format = fmt
        q._str = text
        q._hash = None
        return q

    # -- construction -------------------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse a quantity string exactly as `resource.ParseQuantity` does; `QuantityError` names the input (and is the
        only error: a number with more digits than Python converts is one too)."""
        if not isinstance(text, str):
            raise QuantityError(f"invalid quantity {text!r}: expected a string, got {type(text).__name__}")
        cached = _PARSED.get(text)
        if cached is not None:
            return cached
        try:
            q = cls._parse(text)
        except QuantityError:
            raise
        except ValueError as exc:  # int() and str() past sys.get_int_max_str_digits: more digits than are read
            shown = repr(text) if len(text) <= 64 else f"{text[:64]!r}... ({len(text)} characters)"
            raise QuantityError(f"invalid quantity {shown}: {exc}") from None
        if len(text) <= _PARSED_TEXT_MAX:
            if len(_PARSED) >= _PARSED_MAX:
                _PARSED.clear()
            _PARSED[text] = q
        return q

    @classmethod
    def _parse(cls, text: str) -> Quantity:
        if not text:
            raise QuantityError(f"invalid quantity '': {_ERR_FORMAT}")
        if text == "0":
            return cls._make(0, 0, False, "DecimalSI", "0")
        scan = _scan(text)
        base, exponent, fmt = _interpret_suffix(text, scan.suffix)
        num, denom = scan.num, scan.denom
        if base == 10 and exponent > _MAX_EXPONENT:
            raise QuantityError(f"invalid quantity {text!r}: exponent {exponent} is beyond {_MAX_EXPONENT}")

        mantissa = 1
        if fmt == "BinarySI":
            scale = 0
            if exponent >= 0 and not denom:
                mantissa = 1 << exponent
                precision = 15 - len(num) - (exponent * 3) // 10 - 1
            else:
                precision = -1
        else:
            scale = exponent
            precision = 18 - (len(num) + len(denom))

        if precision >= 0:
            scale -= len(denom)
            if scale >= _NANO:
                shifted = num + denom
                result = int(shifted) * mantissa
                if _fits_int64(result):
                    if not scan.positive:
                        result = -result
                    keep = False
                    if fmt == "BinarySI":
                        keep = exponent % 10 == 0 and int(shifted) & 0x07 != 0
                    else:
                        keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                    return cls._make(result, scale, False, fmt, text if keep else None)

        # The arbitrary-precision path (inf.Dec in Go).
        if not scan.has_digit:
            raise QuantityError(f"invalid quantity {text!r}: {_ERR_NUMERIC}")
        mant = int(num + denom)
        exp = -len(denom)
        if base == 10:
            exp += exponent
        else:
            mant <<= exponent
        if not scan.positive:
            mant = -mant
        if mant == 0:
            exp = 0
        else:
            # Non-zero values round up (away from zero) to 1n: "if you want some resources, you should get some".
            mant, exp = _round_to_nano(mant, exp)
        if fmt == "BinarySI":
            if abs(mant) > _MAX_INT64 * _p10(-exp):
                mant, exp = (_MAX_INT64 if mant > 0 else -_MAX_INT64), 0
            elif mant and abs(mant) < _p10(-exp):
                fmt = "DecimalSI"
        return cls._make(mant, exp, True, fmt)

    @classmethod
    def from_int(cls, n: int, format: Format = "DecimalSI") -> Quantity:
        """`resource.NewQuantity(n, format)`."""
        if format not in _FORMATS:
            raise QuantityError(f"unknown quantity format {format!r}: expected one of {', '.join(_FORMATS)}")
        if isinstance(n, bool) or not isinstance(n, int):
            raise QuantityError(f"Quantity.from_int expects an int, got {type(n).__name__}")
        return cls._make(n, 0, not _fits_int64(n), format)

    @classmethod
    def from_scaled(cls, value: int, scale: int, format: Format = "DecimalSI") -> Quantity:
        """`value * 10**scale` in the int64 form when `value` fits (`resource.NewScaledQuantity`, any format)."""
        if format not in _FORMATS:
            raise QuantityError(f"unknown quantity format {format!r}: expected one of {', '.join(_FORMATS)}")
        if isinstance(value, bool) or not isinstance(value, int) or not isinstance(scale, int):
            raise QuantityError("Quantity.from_scaled expects int value and scale")
        return cls._make(value, scale, not _fits_int64(value), format)

    @classmethod
    def coerce(cls, value: object) -> Quantity:
        """A Quantity from a Quantity, a string, an int or a float (as JSON numbers are parsed by Kubernetes)."""
        if isinstance(value, Quantity):
            return value
        if isinstance(value, str):
            return cls.parse(value.strip())
        if isinstance(value, bool):
            raise QuantityError(f"invalid quantity {value!r}: expected a string or a number, got bool")
        if isinstance(value, int):
            return cls.parse(str(value))
        if isinstance(value, float):
            return cls.parse(repr(value))
        raise QuantityError(f"invalid quantity {value!r}: expected a string or a number, got {type(value).__name__}")

    # -- inspection ---------------------------------------------------------------------------------------------

    @property
    def format(self) -> Format:
        """The suffix family the quantity prints in: `DecimalSI`, `BinarySI` or `DecimalExponent`."""
        return self._format

    @property
    def value(self) -> Fraction:
        """The exact numeric value."""
        if self._exp >= 0:
            return Fraction(self._mant * _p10(self._exp))
        return Fraction(self._mant, _p10(-self._exp))

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self._mant > 0) - (self._mant < 0)

    def is_zero(self) -> bool:
        return self._mant == 0

    def _as_int64(self) -> int | None:
        # Quantity.AsInt64: only the int64 form converts, and only at a non-negative scale.
        if self._dec or self._exp < 0:
            return None
        result = self._mant * _p10(self._exp) if self._exp else self._mant
        return result if _fits_int64(result) else None

    def is_integer(self) -> bool:
        """True when `as_int()` succeeds (Kubernetes' `AsInt64`; e.g. false for `"1000m"` and `"0.5Gi"`)."""
        return self._as_int64() is not None

    def as_int(self) -> int:
        """The value as an int64, as `AsInt64`; raises `QuantityError` "cannot convert value to integer"."""
        result = self._as_int64()
        if result is None:
            raise QuantityError(f"cannot convert value to integer: {self}")
        return result

    def as_float(self) -> float:
        """`AsApproximateFloat64`: may lose precision; ±inf when out of range."""
        try:
            base = float(self._mant)
        except OverflowError:
            return float("inf") if self._mant > 0 else float("-inf")
        if self._exp == 0:
            return base
        try:
            if self._exp > 0:
                return base * float(_p10(self._exp))
            return base * (1.0 / float(_p10(-self._exp)))
        except OverflowError:
            if self._exp < 0:
                return 0.0 * base
            return float("inf") if self._mant > 0 else float("-inf")

    def scaled_value(self, scale: int = 0) -> int:
        """`Quantity.ScaledValue(scale)`: the value over 10**scale, rounded away from zero (unbounded, unlike Go).

        `scaled_value()` is `Quantity.Value()`, `scaled_value(-3)` is `MilliValue()`.
        """
        exp = self._exp - scale
        if exp >= 0:
            return self._mant * _p10(exp)
        q, r = divmod(abs(self._mant), _p10(-exp))
        if r:
            q += 1
        return q if self._mant >= 0 else -q

    # -- arithmetic (Quantity.Add / Sub / Neg / Mul; results are new objects) -----------------------------------

    @staticmethod
    def _operand(other: object) -> Quantity | None:
        if isinstance(other, Quantity):
            return other
        if isinstance(other, int) and not isinstance(other, bool):
            return Quantity.from_int(other)
        return None

    def _add(self, y: Quantity) -> Quantity:
        fmt = y._format if self._mant == 0 else self._format
        if not self._dec and not y._dec:
            a_m, a_e, b_m, b_e = self._mant, self._exp, y._mant, y._exp
            if b_m == 0:
                return Quantity._make(a_m, a_e, False, fmt)
            if a_m == 0:
                return Quantity._make(b_m, b_e, False, fmt)
            if a_e == b_e:
                total = a_m + b_m
                if _fits_int64(total):
                    return Quantity._make(total, a_e, False, fmt)
            elif a_e > b_e:
                scaled = a_m * _p10(a_e - b_e)
                if _fits_int64(scaled) and _fits_int64(scaled + b_m):
                    return Quantity._make(scaled + b_m, b_e, False, fmt)
            else:
                scaled = b_m * _p10(b_e - a_e)
                if _fits_int64(scaled) and _fits_int64(a_m + scaled):
                    return Quantity._make(a_m + scaled, a_e, False, fmt)
        # inf.Dec.Add: the result takes the larger scale, i.e. the smaller exponent.
        exp = min(self._exp, y._exp)
        mant = self._mant * _p10(self._exp - exp) + y._mant * _p10(y._exp - exp)
        return Quantity._make(mant, exp, True, fmt)

    def __add__(self, other: object) -> Quantity:
        y = self._operand(other)
        if y is None:
            return NotImplemented
        return self._add(y)

    def __radd__(self, other: object) -> Quantity:
        y = self._operand(other)
        if y is None:
            return NotImplemented
        return y._add(self)

    def __sub__(self, other: object) -> Quantity:
        y = self._operand(other)
        if y is None:
            return NotImplemented
        return self._add(-y)

    def __rsub__(self, other: object) -> Quantity:
        y = self._operand(other)
        if y is None:
            return NotImplemented
        return y - self

    def __neg__(self) -> Quantity:
        return Quantity._make(-self._mant, self._exp, self._dec, self._format)

    def __pos__(self) -> Quantity:
        return self

    def __abs__(self) -> Quantity:
        return -self if self._mant < 0 else self

    def __mul__(self, other: object) -> Quantity:
        """`Quantity.Mul(int64)`."""
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        if not self._dec:
            if self._mant == 0:
                return Quantity._make(0, self._exp, False, self._format)
            if other == 0:
                return Quantity._make(0, 0, False, self._format)
            product = self._mant * other
            if _fits_int64(product) and _fits_int64(other):
                exp = self._exp
                if (
                    exp == 0
                    or (exp > 0 and _fits_int64(product * _p10(exp)))
                    or (exp < 0 and product % _p10(-exp) == 0)
                ):
                    return Quantity._make(product, exp, False, self._format)
        return Quantity._make(self._mant * other, self._exp, True, self._format)

    __rmul__ = __mul__

    # -- comparison and hashing ---------------------------------------------------------------------------------

    def _cmp(self, other: Quantity) -> int:
        a, b = self._mant, other._mant
        if self._exp > other._exp:
            a *= _p10(self._exp - other._exp)
        elif self._exp < other._exp:
            b *= _p10(other._exp - self._exp)
        return (a > b) - (a < b)

    def compare(self, other: Quantity | int) -> int:
        """`Quantity.Cmp`: -1, 0 or 1."""
        y = self._operand(other)
        if y is None:
            raise TypeError(f"cannot compare Quantity with {type(other).__name__}")
        return self._cmp(y)

    def __eq__(self, other: object) -> bool:
        y = self._operand(other)
        if y is None:
            return NotImplemented
        return self._cmp(y) == 0

    def __lt__(self, other: object) -> bool:
        y = self._operand(other)
        if y is None:
            return NotImplemented
        return self._cmp(y) < 0

    def __le__(self, other: object) -> bool:
        y = self._operand(other)
        if y is None:
            return NotImplemented
        return self._cmp(y) <= 0

    def __gt__(self, other: object) -> bool:
        y = self._operand(other)
        if y is None:
            return NotImplemented
        return self._cmp(y) > 0

    def __ge__(self, other: object) -> bool:
        y = self._operand(other)
        if y is None:
            return NotImplemented
        return self._cmp(y) >= 0

    def __hash__(self) -> int:
        if self._hash is None:
            # Equal to hash(int) / hash(Fraction) of the value, so that q == 3 implies hash(q) == hash(3).
            mant, tens = _strip_tens(self._mant)
            exp = self._exp + tens
            self._hash = hash(mant * _p10(exp)) if exp >= 0 else hash(Fraction(mant, _p10(-exp)))
        return self._hash

    # -- printing -----------------------------------------------------------------------------------------------

    def __str__(self) -> str:
        if self._str is None:
            self._str = self._canonical()
        return self._str

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Quantity._make, (self._mant, self._exp, self._dec, self._format, self._str))

    def __copy__(self) -> Quantity:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Quantity:
        return self

    def _canonical(self) -> str:
        """CanonicalizeBytes + suffix construction."""
        mant, exp = self._mant, self._exp
        if mant == 0:
            return "0"
        fmt = self._format
        if fmt == "BinarySI":
            small = abs(mant) * _p10(exp) < 1024 if exp >= 0 else abs(mant) < 1024 * _p10(-exp)
            if small or (exp < 0 and mant % _p10(-exp)):
                fmt = "DecimalSI"
            else:
                return self._binary_string()
        mant, tens = _strip_tens(mant)
        exp += tens
        extra = exp % 3
        if extra:
            mant *= _p10(extra)
            exp -= extra
        if fmt == "DecimalSI":
            suffix = _DECIMAL_SUFFIX.get(exp)
            if suffix is not None:
                return f"{mant}{suffix}"
            # apimachinery before kubernetes/kubernetes#140459 dropped the suffix here ("1" for 10**21); the fix
            # falls back to the exponent form, which keeps the value.
        return f"{mant}e{exp}" if exp else str(mant)

    def _binary_string(self) -> str:
        value = self._mant * _p10(self._exp) if self._exp >= 0 else self._mant // _p10(-self._exp)
        magnitude = abs(value)
        times = 0
        while magnitude >= 1024 and magnitude % 1024 == 0 and times < len(_BINARY_SUFFIX) - 1:
            magnitude //= 1024
            times += 1
        sign = "-" if value < 0 else ""
        return f"{sign}{magnitude}{_BINARY_SUFFIX[times]}"

    # -- pydantic -----------------------------------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        from pydantic_core import core_schema

        def validate(value: object) -> Quantity:
            try:
                return cls.coerce(value)
            except QuantityError as err:
                raise ValueError(str(err)) from None

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(str, when_used="always"),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "pattern": _SPLIT_RE, "description": "A Kubernetes resource quantity"}
