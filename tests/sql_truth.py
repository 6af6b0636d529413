"""SQL's three-valued truth of a mergetree filter on one row: what a model of a filtered read
or a `DELETE ... WHERE` keeps (true), drops (false) or leaves aside (unknown, None)."""
from __future__ import annotations


def truth(q: tuple, row: dict) -> bool | None:
    """SQL's three-valued logic, row by row."""
    if q[0] in ("and", "or") and isinstance(q[1], list):
        values = [truth(x, row) for x in q[1]]
        if q[0] == "and":
            return False if False in values else (None if None in values else True)
        return True if True in values else (None if None in values else False)
    if q[0] == "not":
        inner = truth(q[1], row)
        return None if inner is None else not inner
    column, op, value = q
    x = row[column]
    if op == "is null":
        return x is None
    if op == "is not null":
        return x is not None
    if x is None:
        return None
    if op in ("in", "not in"):
        return (x in value) == (op == "in")
    return {"=": x == value, "!=": x != value, "<": x < value, "<=": x <= value, ">": x > value,
            ">=": x >= value}[op]
