"""Read a topic or group pattern as Java reads it: MM2 compiles `topics`, `groups` and their excludes with
java.util.regex, so an MM2 file may hold Java-only syntax that Python's `re` refuses or reads differently.

`to_python` rewrites what differs and `compile_java` compiles the result with `re.ASCII`, because Java's `\\w`,
`\\d`, `\\s` and case-insensitive matching are ASCII-only unless a pattern asks otherwise:

- POSIX classes `\\p{Lower}`, `\\p{Alnum}`, ... (US-ASCII, as in Java) and their negations `\\P{...}`;
- quoting `\\Q...\\E`; named groups `(?<name>...)` and back-references `\\k<name>`;
- `\\z` (Python's `\\Z`), Java's `\\Z` (the end, or before a final line break), `\\h`, `\\H`, `\\v`, `\\V`, `\\R`,
  `\\e`, `\\cX`, `\\0ooo` and `\\x{h...h}`;
- inline flags in the middle of a pattern (`ab(?i)cd`): Java keeps them on to the end of the enclosing group,
  across its alternatives; Python 3.11 refuses them there, so each is turned into scoped groups.

Possessive quantifiers and atomic groups mean the same in both. What has no faithful reading is refused with an
error naming the construct (Unicode property classes such as `\\p{L}`, class intersections `&&`, nested classes,
`\\G`, the `u`/`U` flags), never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Java's POSIX character classes (US-ASCII), as the inside of a Python character class.
POSIX_CLASSES = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": "!-/:-@\\[-`{-~",
    "Graph": "!-~",
    "Print": " -~",
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}
_HORIZONTAL = " \\t\\xa0\\u1680\\u180e\\u2000-\\u200a\\u202f\\u205f\\u3000"
_VERTICAL = "\\n\\x0b\\f\\r\\x85\\u2028\\u2029"
_SIMPLE = {
    "z": "\\Z",
    "Z": "(?=(?:\\r\\n|[\\n\\r\\x85\\u2028\\u2029])?\\Z)",
    "h": f"[{_HORIZONTAL}]",
    "H": f"[^{_HORIZONTAL}]",
    "v": f"[{_VERTICAL}]",
    "V": f"[^{_VERTICAL}]",
    "R": f"(?:\\r\\n|[{_VERTICAL}])",
    "e": "\\x1b",
}
_IN_CLASS = {"h": _HORIZONTAL, "v": _VERTICAL, "e": "\\x1b"}
_REFUSED = {"G": "\\G (the end of the previous match)", "X": "\\X (a grapheme cluster)", "N": "\\N{name}"}
_PYTHON_FLAGS = set("imsx")
_DROPPED_FLAGS = set("d")  # UNIX_LINES: only `.`, `^` and `$` around \r, which no topic or group name holds


class JavaRegexError(ValueError):
    """A Java pattern with no faithful Python reading; the message names the construct."""


def compile_java(pattern: str) -> re.Pattern[str]:
    """Compile `pattern` as Java would read it (re.error or JavaRegexError if it is not valid)."""
    return re.compile(to_python(pattern), re.ASCII)


def to_python(pattern: str) -> str:
    """The Python spelling of a Java regular expression (see the module docstring)."""
    return _Translator(pattern).run()


@dataclass
class _Group:
    """An open group of the output: the inline flags switched on inside it so far (each opened a scoped group)."""

    scoped_flags: list[str] = field(default_factory=list)


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.src = pattern
        self.at = 0
        self.out: list[str] = []
        self.groups: list[_Group] = [_Group()]

    def run(self) -> str:
        while self.at < len(self.src):
            char = self.src[self.at]
            if char == "\\":
                self.out.append(self._escape(in_class=False))
            elif char == "[":
                self.out.append(self._character_class())
            elif char == "(":
                self._open_group()
            elif char == ")":
                self._close_group()
            elif char == "|":
                self._alternative()
            else:
                self.out.append(char)
                self.at += 1
        self._close_scoped(self.groups[-1])
        return "".join(self.out)

    # -- groups and inline flags -------------------------------------------------------------------------
    def _open_group(self) -> None:
        rest = self.src[self.at :]
        named = re.match(r"\(\?<([A-Za-z][A-Za-z0-9]*)>", rest)
        if named:
            self.out.append(f"(?P<{named.group(1)}>")
            self.at += named.end()
            self.groups.append(_Group())
            return
        flags = re.match(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])", rest)
        if flags and (flags.group(1) or flags.group(2) is not None):
            on, off = self._flags(flags.group(1)), self._flags(flags.group(2) or "")
            self.at += flags.end()
            spelled = on + (f"-{off}" if off else "")
            if flags.group(3) == ":":
                self.out.append(f"(?{spelled}:" if spelled else "(?:")
                self.groups.append(_Group())
            elif spelled:  # (?i) to the end of the enclosing group: a scoped group, reopened after each `|`
                self.out.append(f"(?{spelled}:")
                self.groups[-1].scoped_flags.append(spelled)
            return
        self.out.append("(")
        self.at += 1
        self.groups.append(_Group())

    def _flags(self, letters: str) -> str:
        kept = ""
        for letter in letters:
            if letter in _PYTHON_FLAGS:
                kept += letter
            elif letter not in _DROPPED_FLAGS:
                raise JavaRegexError(f"the inline flag '{letter}' has no Python equivalent here")
        return kept

    def _close_scoped(self, group: _Group) -> None:
        self.out.append(")" * len(group.scoped_flags))

    def _close_group(self) -> None:
        if len(self.groups) == 1:
            raise JavaRegexError(f"unbalanced ')' at position {self.at}")
        self._close_scoped(self.groups.pop())
        self.out.append(")")
        self.at += 1

    def _alternative(self) -> None:
        group = self.groups[-1]
        self._close_scoped(group)
        self.out.append("|")
        self.out.extend(f"(?{flags}:" for flags in group.scoped_flags)
        self.at += 1

    # -- escapes -------------------------------------------------------------------------------------------
    def _escape(self, *, in_class: bool) -> str:
        if self.at + 1 >= len(self.src):
            raise JavaRegexError("the pattern ends with a lone backslash")
        letter = self.src[self.at + 1]
        self.at += 2
        if letter == "Q":
            end = self.src.find("\\E", self.at)
            literal = self.src[self.at :] if end < 0 else self.src[self.at : end]
            self.at = len(self.src) if end < 0 else end + 2
            return "".join(_escape_char(c) for c in literal) if in_class else re.escape(literal)
        if letter in "pP":
            return self._property(negated=letter == "P", in_class=in_class)
        if letter == "k" and not in_class:
            name = re.match(r"<([A-Za-z][A-Za-z0-9]*)>", self.src[self.at :])
            if not name:
                raise JavaRegexError("\\k must be followed by <name>")
            self.at += name.end()
            return f"(?P={name.group(1)})"
        if letter == "x" and self.src.startswith("{", self.at):
            end = self.src.find("}", self.at)
            if end < 0:
                raise JavaRegexError("\\x{ without its closing }")
            digits = self.src[self.at + 1 : end]
            if not re.fullmatch(r"[0-9a-fA-F]{1,6}", digits) or int(digits, 16) > 0x10FFFF:
                raise JavaRegexError(f"\\x{{{digits}}} is not a code point")
            code = int(digits, 16)
            self.at = end + 1
            return _escape_char(chr(code))
        if letter == "c":
            if self.at >= len(self.src):
                raise JavaRegexError("\\c must be followed by a letter")
            control = chr(ord(self.src[self.at]) ^ 64)
            self.at += 1
            return _escape_char(control)
        if letter == "0":
            octal = re.match(r"[0-3]?[0-7]{1,2}", self.src[self.at :])
            if not octal:
                raise JavaRegexError("\\0 must be followed by octal digits")
            self.at += octal.end()
            return _escape_char(chr(int(octal.group(), 8)))
        if letter in _REFUSED:
            raise JavaRegexError(f"{_REFUSED[letter]} has no Python equivalent")
        if in_class:
            if letter in _IN_CLASS:
                return _IN_CLASS[letter]
            if letter in "HVR":
                raise JavaRegexError(f"\\{letter} inside a character class has no Python equivalent")
            return "\\" + letter
        return _SIMPLE.get(letter, "\\" + letter)

    def _property(self, *, negated: bool, in_class: bool) -> str:
        braced = re.match(r"\{([A-Za-z_]+)\}", self.src[self.at :])
        if braced:
            name, self.at = braced.group(1), self.at + braced.end()
        elif self.at < len(self.src):
            name, self.at = self.src[self.at], self.at + 1
        else:
            raise JavaRegexError("\\p must name a class")
        ranges = POSIX_CLASSES.get(name)
        if ranges is None:
            raise JavaRegexError(
                f"\\p{{{name}}} has no Python equivalent (Python's re has no Unicode property classes); "
                "write the characters as a class, e.g. [a-z]"
            )
        if in_class:
            if negated:
                raise JavaRegexError(f"\\P{{{name}}} inside a character class has no Python equivalent")
            return ranges
        return f"[^{ranges}]" if negated else f"[{ranges}]"

    # -- character classes -----------------------------------------------------------------------------
    def _character_class(self) -> str:
        parts = ["["]
        self.at += 1
        if self.src.startswith("^", self.at):
            parts.append("^")
            self.at += 1
        first = True
        while self.at < len(self.src):
            char = self.src[self.at]
            if char == "]" and not first:
                self.at += 1
                parts.append("]")
                return "".join(parts)
            if char == "[":
                raise JavaRegexError("a character class inside a class (a union) has no Python equivalent")
            if self.src.startswith("&&", self.at):
                raise JavaRegexError("a class intersection (&&) has no Python equivalent")
            if char == "\\":
                parts.append(self._escape(in_class=True))
            else:
                parts.append("\\]" if char == "]" else char)
                self.at += 1
            first = False
        raise JavaRegexError("a character class is not closed with ]")


def _escape_char(char: str) -> str:
    """One character as a Python pattern writes it literally, inside or outside a class."""
    code = ord(char)
    if char.isalnum() and code < 128:
        return char
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
