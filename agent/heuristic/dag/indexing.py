"""Index arithmetic of the DAG planner's C code: a flat index parsed into a sum of mixed-radix digits of named values,
simplified with what their ranges allow, and written back as C.

The planner composes index maps as text: a reshape's coordinates of a view's flat index of a cat's part of a flat
index. Read literally, each layer divides and takes remainders of the one before it (on the H100 and on the CPU
alike, 64-bit divisions are most of such a kernel's instructions). Here `(i / 64) * 32 + c` with c in [0, 32)
divided by 32 is `i / 64` again, `(i / 512) * 512 + i % 512` is `i`, and `((i / 8) % 4) / 2` is `(i / 16) % 2`.

Every rule holds for C's truncating division only where what it divides is not negative; a flat index never is, and
neither is a name the emitter calls an index, while a value of unknown sign (a subexpression the parser does not
read: a ternary, a cast) keeps its division as written. The order of terms is the order they were written in, so
that sources written at several batch sizes differ in numbers only (batch.py)."""

import math
import re
from dataclasses import dataclass

INF = None  # an unbounded upper end of a range


@dataclass(frozen=True)
class Atom:
    """A value the algebra does not look into: a name or an opaque C subexpression, in [lo, hi] (None: unknown lo,
    unbounded hi)."""

    text: str
    lo: int | None = 0
    hi: int | None = INF


@dataclass(frozen=True)
class Digit:
    """(base / div) % mod of a non-negative BASE (an Expr); mod None: no remainder taken."""

    base: "Expr"
    div: int
    mod: int | None


@dataclass(frozen=True)
class Expr:
    """const + the sum of coef * atom over TERMS (atoms are Atom or Digit), terms in the order they were written."""

    const: int = 0
    terms: tuple = ()


def const(value):
    return Expr(int(value), ())


def atom(text, lo=0, hi=INF):
    return Expr(0, ((1, Atom(text, lo, hi)),))


# -- ranges ------------------------------------------------------------------------------------------------------------
def _add(a, b):
    return None if a is None or b is None else a + b


def _scale(lo, hi, coef):
    """The range of coef * x for x in [lo, hi]."""
    if coef >= 0:
        return (None if lo is None else lo * coef), (None if hi is None else hi * coef)
    return (None if hi is None else hi * coef), (None if lo is None else lo * coef)


def term_range(a):
    if isinstance(a, Atom):
        return a.lo, a.hi
    lo, hi = bounds(a.base)
    if lo is None or lo < 0:
        return None, None
    lo, hi = lo // a.div, (None if hi is None else hi // a.div)
    if a.mod is not None and (hi is None or hi >= a.mod):
        return 0, a.mod - 1
    return lo, hi


def bounds(e):
    """(lo, hi) of E: None where unknown (lo) or unbounded (hi)."""
    lo = hi = e.const
    for coef, a in e.terms:
        tlo, thi = _scale(*term_range(a), coef)
        lo, hi = _add(lo, tlo), _add(hi, thi)
    return lo, hi


def within(e, lo, hi):
    """E certainly in [lo, hi]."""
    elo, ehi = bounds(e)
    return elo is not None and elo >= lo and ehi is not None and ehi <= hi


def nonnegative(e):
    lo, _ = bounds(e)
    return lo is not None and lo >= 0


# -- construction ------------------------------------------------------------------------------------------------------
def _digit(base, div, mod):
    """The simplest Expr of (BASE / DIV) % MOD for a BASE already split as far as it goes."""
    lo, hi = bounds(base)
    if hi is not None and lo is not None and lo >= 0 and hi < div:
        return const(0)
    if mod is not None and hi is not None and lo is not None and lo >= 0 and hi // div < mod:
        mod = None
    if div == 1 and mod is None:
        return base
    if not base.terms and base.const >= 0:
        value = base.const // div
        return const(value if mod is None else value % mod)
    if base.const == 0 and len(base.terms) == 1 and base.terms[0][0] == 1 and isinstance(base.terms[0][1], Digit):
        inner = base.terms[0][1]  # a digit of a digit: one digit of the inner base
        if inner.mod is None:
            return _digit(inner.base, inner.div * div, mod)
        if inner.mod % div == 0:  # ((b / a) % (div * k)) / div = (b / (a * div)) % k
            left = inner.mod // div
            if mod is None or left % mod == 0:
                return _digit(inner.base, inner.div * div, left if mod is None else mod)
    return Expr(0, ((1, Digit(base, div, mod)),))


def add(*exprs):
    c, terms = 0, []
    for e in exprs:
        c += e.const
        terms += e.terms
    return normalize(Expr(c, tuple(terms)))


def scale(e, k):
    if k == 0:
        return const(0)
    return Expr(e.const * k, tuple((coef * k, a) for coef, a in e.terms))


def normalize(e):
    """Like atoms combined, zero terms dropped, a digit followed by the next one of the same base merged, a digit of
    no division and no remainder inlined."""
    merged = {}
    order = []
    c = e.const
    stack = list(e.terms)
    while stack:
        coef, a = stack.pop(0)
        if isinstance(a, Digit) and a.div == 1 and a.mod is None:
            c += coef * a.base.const
            stack[:0] = [(coef * k, b) for k, b in a.base.terms]
            continue
        if a in merged:
            merged[a] += coef
        else:
            merged[a] = coef
            order.append(a)
    terms = [(merged[a], a) for a in order if merged[a] != 0]
    changed = True
    while changed:
        changed = False
        for x in range(len(terms)):
            cx, dx = terms[x]
            if not isinstance(dx, Digit) or dx.mod is None:
                continue
            for y in range(len(terms)):
                cy, dy = terms[y]
                if (
                    y != x
                    and isinstance(dy, Digit)
                    and dy.base == dx.base
                    and dy.div == dx.div * dx.mod
                    and cy == cx * dx.mod
                ):
                    mod = None if dy.mod is None else dx.mod * dy.mod
                    whole = _digit(dx.base, dx.div, mod)
                    first = min(x, y)
                    rest = [t for k, t in enumerate(terms) if k not in (x, y)]
                    inserted = [(cx * k, b) for k, b in whole.terms]
                    c += cx * whole.const
                    terms = rest[:first] + inserted + rest[first:]
                    changed = True
                    break
            if changed:
                break
    return Expr(c, tuple(terms))


def floordiv(e, d):
    """E / D (C's division) for a positive constant D."""
    if d == 1:
        return e
    if not nonnegative(e):
        return _opaque_digit(e, d, None)
    if within(e, 0, d - 1):
        return const(0)
    split = _split(e, d)
    if split is not None:  # (g * y + c) / d = y / (d / g) for c in [0, g) and g dividing d
        g, y, _ = split
        return floordiv(y, d // g)
    high = [(coef // d, a) for coef, a in e.terms if coef % d == 0]
    low = [(coef, a) for coef, a in e.terms if coef % d != 0]
    q, r = divmod(e.const, d)
    rest = Expr(r, tuple(low))
    if high or q:
        if nonnegative(rest):  # (d * h + rest) / d = h + rest / d
            return add(Expr(q, tuple(high)), floordiv(rest, d))
        return _opaque_digit(e, d, None)
    if len(low) == 1 and r == 0:
        coef, a = low[0]
        if coef > 1 and d % coef == 0:
            return floordiv(Expr(0, ((1, a),)), d // coef)
        if coef == 1 and isinstance(a, Digit):
            return _digit(Expr(0, ((1, a),)), d, None)
    return _digit(e, d, None)


def mod(e, m):
    """E % M (C's remainder) for a positive constant M."""
    if m == 1:
        return const(0)
    if not nonnegative(e):
        return _opaque_digit(e, 1, m)
    if within(e, 0, m - 1):
        return e
    split = _split(e, m)
    if split is not None:  # (g * y + c) % m = g * (y % (m / g)) + c for c in [0, g) and g dividing m
        g, y, c = split
        return add(scale(mod(y, m // g), g), c)
    low = [(coef, a) for coef, a in e.terms if coef % m != 0]
    rest = Expr(e.const % m, tuple(low))
    if not nonnegative(rest):  # the dropped multiples of M need a non-negative rest to drop
        return _digit(e, 1, m)
    if within(rest, 0, m - 1):
        return rest
    if len(low) == 1 and rest.const == 0:
        coef, a = low[0]
        if coef > 1 and m % coef == 0:
            return scale(mod(Expr(0, ((1, a),)), m // coef), coef)
        if coef == 1 and isinstance(a, Digit):
            return _digit(Expr(0, ((1, a),)), 1, m)
    return _digit(rest, 1, m)


def _split(e, d):
    """(g, y, c) with E = g * y + c, g > 1 a proper divisor of D, y >= 0 and c in [0, g), for the largest such g
    among the common factors of D and E's coefficients; None when there is none."""
    for g in sorted({math.gcd(d, coef) for coef, _ in e.terms}, reverse=True):
        if g in (1, d):
            continue
        q, r = divmod(e.const, g)
        y = Expr(q, tuple((coef // g, a) for coef, a in e.terms if coef % g == 0))
        c = Expr(r, tuple((coef, a) for coef, a in e.terms if coef % g != 0))
        if c.terms and within(c, 0, g - 1) and nonnegative(y):
            return g, y, c
    return None


def _opaque_digit(e, div, m):
    """A division or remainder of a value of unknown sign: kept as written, of unknown range."""
    return Expr(0, ((1, Atom(text(Expr(0, ((1, Digit(e, div, m)),))), None, INF)),))


# -- C text ------------------------------------------------------------------------------------------------------------
def _atom_text(a):
    if isinstance(a, Atom):
        return a.text
    base = a.base
    single = base.const == 0 and len(base.terms) == 1 and base.terms[0][0] == 1 and isinstance(base.terms[0][1], Atom)
    inner = base.terms[0][1].text if single else f"({text(base)})"
    out = inner if a.div == 1 else f"({inner} / {a.div}LL)"
    return out if a.mod is None else f"({out} % {a.mod}LL)"


def text(e):
    """C of E."""
    parts = []
    for coef, a in e.terms:
        t = _atom_text(a)
        magnitude = abs(coef)
        body = t if magnitude == 1 else f"{t} * {magnitude}LL"
        parts.append(("- " if coef < 0 else "+ ") + body)
    if e.const:
        parts.append(("- " if e.const < 0 else "+ ") + str(abs(e.const)))
    if not parts:
        return "0"
    first = parts[0]
    joined = " ".join(parts)
    return joined[2:] if first.startswith("+ ") else "-" + joined[2:]


# -- parsing -----------------------------------------------------------------------------------------------------------
TOKEN = re.compile(r"\s*(?:(\d+)(?:LL|L)?(?![\w.])|([A-Za-z_]\w*)|(.))")


class _Unread(Exception):
    """A construct the algebra does not read (the caller keeps it as an opaque atom)."""


class Parser:
    """Reads the index grammar the emitter writes: integers, names, + - * / %, parentheses. NAMES maps a name to the
    Expr it stands for (the emitter's index variables); RANGES gives the range of other names and of opaque
    parenthesized subexpressions by their text."""

    def __init__(self, names, ranges):
        self.names, self.ranges = names, ranges

    def parse(self, source):
        self.src = source
        self.tokens = [(m.start(), m.group(1), m.group(2), m.group(3)) for m in TOKEN.finditer(source)]
        self.tokens = [t for t in self.tokens if t[1] or t[2] or (t[3] and not t[3].isspace())]
        self.at = 0
        try:
            e = self.sum()
        except _Unread:
            return None
        if self.at != len(self.tokens):
            return None
        return e

    def peek(self):
        return self.tokens[self.at][3] if self.at < len(self.tokens) else None

    def sum(self):
        e = self.product()
        while self.peek() in ("+", "-"):
            op = self.tokens[self.at][3]
            self.at += 1
            right = self.product()
            e = add(e, right if op == "+" else scale(right, -1))
        return e

    def product(self):
        e = self.unary()
        while self.peek() in ("*", "/", "%"):
            op = self.tokens[self.at][3]
            self.at += 1
            right = self.unary()
            if op == "*":
                if not right.terms:
                    e = scale(e, right.const)
                elif not e.terms:
                    e = scale(right, e.const)
                else:
                    raise _Unread
            elif right.terms or right.const <= 0:
                raise _Unread
            else:
                e = floordiv(e, right.const) if op == "/" else mod(e, right.const)
        return e

    def unary(self):
        if self.peek() == "-":
            self.at += 1
            return scale(self.unary(), -1)
        return self.primary()

    def primary(self):
        if self.at >= len(self.tokens):
            raise _Unread
        start, number, name, symbol = self.tokens[self.at]
        self.at += 1
        if number:
            return const(int(number))
        if name:
            if name in self.names:
                return self.names[name]
            lo, hi = self.ranges.get(name, (None, INF))  # a name of unknown sign keeps its divisions as written
            return atom(name, lo, hi)
        if symbol != "(":
            raise _Unread
        opened = self.at
        try:
            e = self.sum()
            if self.peek() != ")":
                raise _Unread
            self.at += 1
            return e
        except _Unread:
            # not ours inside: the whole parenthesized group is one opaque value
            self.at = opened
            depth = 1
            while self.at < len(self.tokens) and depth:
                symbol = self.tokens[self.at][3]
                depth += symbol == "("
                depth -= symbol == ")"
                self.at += 1
            if depth:
                raise _Unread from None
            end = self.tokens[self.at - 1][0]
            raw = self.src[start : end + 1].strip()
            lo, hi = self.ranges.get(raw, (None, INF))
            return atom(raw, lo, hi)
