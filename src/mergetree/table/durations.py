"""Durations, ages and moments given as arguments: one reading for Python and the command line.

* a **duration** (`older_than`, the optimizer daemon's `interval`) is a `datetime.timedelta` or
  a number of seconds;
* **since** (`advise`, `replay`, the report, `mergetree queries show`) is a moment or an age
  before now: a `datetime` (naive means UTC, as the log shows times), a `timedelta`, or text —
  an age as a number and a unit (``"45s"``, ``"90m"``, ``"12h"``, ``"30d"``, ``"2w"``, ``"1.5h"``)
  or an ISO 8601 moment (``"2024-05-01"``, ``"2024-05-01T12:00"``, ``"2024-05-01T12:00+02:00"``).
  The command line's ``--since`` reads its text with the same `parse_since`.

Every value is checked: negative, NaN, infinite and unrepresentably large values are an
`InvalidArgumentError` naming the argument and saying what it takes.
"""
from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

from ..errors import InvalidArgumentError

__all__ = ["AGE_UNITS", "MAX_SECONDS", "java_duration", "parse_age", "parse_since", "seconds", "since_moment"]

AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
MAX_SECONDS = dt.timedelta.max.total_seconds()  # every duration is representable as a timedelta
_AGE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zµ]+)\s*", re.IGNORECASE)
_AGE_FORMS = "an age is a number and a unit (s, m, h, d, w), like 30d or 1.5h"
# the unit names Java's duration options take too (Paimon's and Flink's `TimeUtils`), in seconds
_UNIT_NAMES = {
    **{name: 1e-9 for name in ("ns", "nano", "nanos", "nanosecond", "nanoseconds")},
    **{name: 1e-6 for name in ("µs", "micro", "micros", "microsecond", "microseconds")},
    **{name: 1e-3 for name in ("ms", "milli", "millis", "millisecond", "milliseconds")},
    **{name: 1 for name in ("s", "sec", "secs", "second", "seconds")},
    **{name: 60 for name in ("m", "min", "mins", "minute", "minutes")},
    **{name: 3600 for name in ("h", "hour", "hours")},
    **{name: 86_400 for name in ("d", "day", "days")},
    "w": 604_800,
}


def seconds(value: Any, name: str, *, positive: bool = False, maximum: float = MAX_SECONDS) -> float:
    """A duration given as a timedelta or a number of seconds, checked: at least 0 (more
    than 0 when `positive`), finite, at most `maximum` seconds."""
    if isinstance(value, dt.timedelta):
        number = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    else:
        raise InvalidArgumentError(f"{name} must be a datetime.timedelta or a number of seconds, not {value!r}")
    if math.isnan(number) or math.isinf(number):
        raise InvalidArgumentError(f"{name} must be a finite number of seconds, not {value!r}")
    if positive and not number > 0:
        raise InvalidArgumentError(f"{name} must be more than 0 seconds, got {value!r}")
    if not number >= 0:
        raise InvalidArgumentError(f"{name} must not be negative, got {value!r}")
    if number > maximum:
        raise InvalidArgumentError(f"{name} must be at most {maximum:,.0f} seconds, got {value!r}")
    return number


def parse_age(text: str, name: str = "since") -> dt.timedelta:
    """'30d', '12h', '90m', '2w', '45s', '1.5h' -> a timedelta; Java's spellings too ('2 days',
    '30 min', '1 h', '500 ms'), as Paimon's options hold them."""
    match = _AGE.fullmatch(text) if isinstance(text, str) else None
    unit = _UNIT_NAMES.get(match.group(2).lower()) if match is not None else None
    if match is None or unit is None:
        raise InvalidArgumentError(f"{name}: {_AGE_FORMS}, not {text!r}")
    number = float(match.group(1)) * unit
    if number > MAX_SECONDS:
        raise InvalidArgumentError(f"{name}: the age {text!r} is too large (at most {MAX_SECONDS / 86_400:,.0f}d)")
    return dt.timedelta(seconds=number)


def _moment(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value


def parse_since(value: Any, name: str = "since") -> dt.timedelta | dt.datetime | None:
    """`since` as an age (a timedelta, at least 0) or a moment (a datetime with a time zone);
    None stays None.  Text is an age ('30d') or an ISO 8601 date or time."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return _moment(value)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
    if isinstance(value, dt.timedelta):
        seconds(value, name)
        return value
    if isinstance(value, str):
        text = value.strip()
        if _AGE.fullmatch(text):
            return parse_age(text, name)
        try:
            return _moment(dt.datetime.fromisoformat(text))
        except ValueError:
            pass
        raise InvalidArgumentError(f"{name}: {_AGE_FORMS}, or a moment in ISO 8601 like 2024-05-01 or "
                                   f"2024-05-01T12:00; not {value!r}")
    raise InvalidArgumentError(f"{name} must be a datetime, a datetime.timedelta (an age) or text such as '30d' "
                               f"or '2024-05-01', not {value!r}")


def since_moment(value: Any, name: str = "since", now: dt.datetime | None = None) -> dt.datetime | None:
    """The moment `since` means (UTC-aware), None for none; an age reaching before year 1
    means the beginning of time."""
    since = parse_since(value, name)
    if since is None or isinstance(since, dt.datetime):
        return since
    now = now or dt.datetime.now(dt.timezone.utc)
    try:
        return now - since
    except OverflowError:
        return dt.datetime.min.replace(tzinfo=dt.timezone.utc)


# Java's `String.trim` (every char up to ' '), ASCII digits, then a unit label (`TimeUtils`)
_JAVA_DURATION = re.compile(r"[\x00-\x20]*([0-9]+)[\x00-\x20]*([^\x00-\x20]*)[\x00-\x20]*")
_JAVA_UNITS = {label for label in _UNIT_NAMES if label not in ("w", "mins")}


def java_duration(text: str, name: str) -> dt.timedelta:
    """A duration option exactly as Java reads it (``TimeUtils.parseDuration``): a whole number
    with one of Java's unit labels ('1 h', '2 days', '30min'; no weeks, no fractions), or a bare
    number of milliseconds; anything else is refused, since Java's writers would fail on it."""
    match = _JAVA_DURATION.fullmatch(text) if isinstance(text, str) else None
    label = "" if match is None else match.group(2).lower()
    unit = None if match is None else (1e-3 if not label else _UNIT_NAMES.get(label) if label in _JAVA_UNITS else None)
    if match is None or unit is None or int(match.group(1)) >= 2**63:
        raise InvalidArgumentError(f"{name}: Java reads a whole number and a unit (ms, s, min, h, d, or their "
                                   f"names), like 30 min or 2 days, not {text!r}")
    seconds = int(match.group(1)) * unit
    if seconds > MAX_SECONDS:
        raise InvalidArgumentError(f"{name}: {text!r} is too long")
    return dt.timedelta(seconds=seconds)
