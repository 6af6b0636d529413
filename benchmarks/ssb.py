"""The Star Schema Benchmark (SSB): its flattened ``lineorder`` table and its 13 queries.

SSB (O'Neil, O'Neil, Chen, Revilak: "The Star Schema Benchmark", revision 3, 2009) is TPC-H
recast as a star: one fact table ``lineorder`` and the dimensions ``customer``, ``supplier``,
``part`` and ``date``.  The *flattened* form (as ClickHouse's ``lineorder_flat`` and most
lakehouse SSB runs use it) joins the dimensions' attributes into every fact row, so the 13
queries read one table.  The generator follows the specification's domains:

* ``scale`` (SF) x 1,500,000 orders of 1 to 7 lines each (about 6,000,000 rows at SF 1);
  customers SF x 30,000, suppliers SF x 2,000, parts 200,000 x floor(1 + log2 SF) (at least
  ``200,000 x SF`` below SF 1, so that small scales keep every brand);
* ``lo_orderdate`` (date32) uniform over 1992-01-01 .. 1998-12-31 less 151 days (TPC-H's
  order dates), one per order; ``lo_commitdate`` 30 to 90 days later; the date dimension's
  ``d_year`` (1992-1998), ``d_yearmonthnum`` (199201), ``d_yearmonth`` ('Jan1992') and
  ``d_weeknuminyear`` (1-53) derived from it;
* ``lo_quantity`` 1..50, ``lo_discount`` 0..10, ``lo_tax`` 0..8, ``lo_extendedprice`` =
  quantity x the part's retail price (TPC-H's formula), ``lo_revenue`` = extendedprice x
  (100 - discount) / 100, ``lo_supplycost`` = 6 x retail price / 10, ``lo_ordtotalprice`` the
  order's lines with tax and discount; money as ``decimal128(12, 2)``;
* ``c_region``/``s_region`` (5), ``c_nation``/``s_nation`` (25, TPC-H's nations and their
  regions), ``c_city``/``s_city`` (250: the nation's first 9 characters and a digit),
  ``c_mktsegment`` (5), ``p_mfgr`` (5: 'MFGR#1'), ``p_category`` (25: 'MFGR#12'),
  ``p_brand1`` (1,000: 'MFGR#1221'), ``p_size`` 1..50, ``lo_orderpriority`` (5),
  ``lo_shipmode`` (7);
* strings as ``string_view``, the way polars writes them.

`QUERIES` holds the 13 queries (Q1.1 to Q4.3) as the specification writes them with the joins
to the dimensions removed, as multi-line SQL text: predicates on a dimension's attributes read
the flattened columns (``s_region = 'ASIA'``), and the date dimension's predicates on whole
years, months and ranges of years become the ranges of ``lo_orderdate`` they select
(``d_year = 1993`` is ``lo_orderdate >= DATE '1993-01-01' AND lo_orderdate < DATE
'1994-01-01'``, as flattened SSBs write ``toYear(LO_ORDERDATE) = 1993``), so the history filters
the date32 column itself; GROUP BY and the week of Q1.3 keep the ``d_`` columns.
`DATE_OR_RANGE` names the queries with a date or range predicate.
"""
from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pyarrow as pa

__all__ = ["DATE_OR_RANGE", "MONEY", "NATIONS", "QUERIES", "REGIONS", "generate", "history", "rows_at"]

REGIONS = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
# TPC-H's 25 nations and the index of their region
NATIONS = (("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4), ("ETHIOPIA", 0),
           ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2),
           ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2),
           ("ROMANIA", 3), ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3),
           ("UNITED STATES", 1))
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY")
PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW")
SHIPMODES = ("AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MONEY = pa.decimal128(12, 2)
FIRST_DAY = dt.date(1992, 1, 1)
LAST_DAY = dt.date(1998, 12, 31)
ORDER_DAYS = (LAST_DAY - FIRST_DAY).days + 1 - 151   # TPC-H: order dates end 151 days before the last date
ORDERS_PER_SF = 1_500_000

SCHEMA = pa.schema([
    ("lo_orderkey", pa.int64()), ("lo_linenumber", pa.int8()), ("lo_custkey", pa.int32()),
    ("lo_partkey", pa.int32()), ("lo_suppkey", pa.int32()), ("lo_orderdate", pa.date32()),
    ("lo_orderpriority", pa.string_view()), ("lo_shippriority", pa.string_view()), ("lo_quantity", pa.int8()),
    ("lo_extendedprice", MONEY), ("lo_ordtotalprice", MONEY), ("lo_discount", pa.int8()), ("lo_revenue", MONEY),
    ("lo_supplycost", MONEY), ("lo_tax", pa.int8()), ("lo_commitdate", pa.date32()),
    ("lo_shipmode", pa.string_view()),
    ("d_year", pa.int16()), ("d_yearmonthnum", pa.int32()), ("d_yearmonth", pa.string_view()),
    ("d_weeknuminyear", pa.int8()),
    ("c_city", pa.string_view()), ("c_nation", pa.string_view()), ("c_region", pa.string_view()),
    ("c_mktsegment", pa.string_view()),
    ("s_city", pa.string_view()), ("s_nation", pa.string_view()), ("s_region", pa.string_view()),
    ("p_mfgr", pa.string_view()), ("p_category", pa.string_view()), ("p_brand1", pa.string_view()),
    ("p_size", pa.int8()),
])


def rows_at(scale: float) -> int:
    """About how many lineorder rows `generate(scale)` makes (4 lines per order on average)."""
    return round(ORDERS_PER_SF * scale) * 4


def _strings(values: list[str] | tuple[str, ...], index: np.ndarray) -> pa.Array:
    """values[index] as a string_view array (built through a dictionary: one copy)."""
    dictionary = pa.DictionaryArray.from_arrays(pa.array(index.astype(np.int32)), pa.array(list(values)))
    return dictionary.cast(pa.string()).cast(pa.string_view())


def _money(cents: np.ndarray) -> pa.Array:
    """Integer cents as decimal128(12, 2): the 128-bit little-endian two's complement built
    in numpy (no Python objects)."""
    words = np.empty((len(cents), 2), dtype=np.int64)
    words[:, 0] = cents
    words[:, 1] = cents >> 63
    return pa.Array.from_buffers(MONEY, len(cents), [None, pa.py_buffer(words.tobytes())])


def _city_names() -> list[str]:
    """The spec's cities, by nation * 10 + digit: the nation's name padded or cut to 9
    characters, then a digit ('UNITED KI1')."""
    return [f"{name[:9]:<9}{d}" for name, _ in NATIONS for d in range(10)]


def generate(scale: float = 1.0, seed: int = 0) -> pa.Table:
    """The flattened lineorder table at scale factor `scale` (see the module docstring)."""
    if not scale > 0:
        raise ValueError(f"the scale factor must be positive, not {scale!r}")
    rng = np.random.default_rng(seed)
    orders = max(1, round(ORDERS_PER_SF * scale))
    customers = max(3_000, round(30_000 * scale))
    suppliers = max(1_000, round(2_000 * scale))
    parts = 200_000 * math.floor(1 + math.log2(scale)) if scale >= 1 else max(2_000, round(200_000 * scale))

    # dimensions: each key's attributes as small integer codes
    c_nation = rng.integers(0, 25, customers)
    c_city = c_nation * 10 + rng.integers(0, 10, customers)
    c_segment = rng.integers(0, len(SEGMENTS), customers)
    s_nation = rng.integers(0, 25, suppliers)
    s_city = s_nation * 10 + rng.integers(0, 10, suppliers)
    p_mfgr = rng.integers(1, 6, parts)
    p_category = p_mfgr * 10 + rng.integers(1, 6, parts)
    p_brand = p_category * 100 + rng.integers(1, 41, parts)
    p_size = rng.integers(1, 51, parts)
    part_keys = np.arange(1, parts + 1)
    retail = 90_000 + (part_keys // 10) % 20_001 + 100 * (part_keys % 1_000)   # cents (TPC-H P_RETAILPRICE)

    # orders, then their lines
    lines = rng.integers(1, 8, orders)
    n = int(lines.sum())
    order_of_line = np.repeat(np.arange(orders), lines)
    starts = np.concatenate([[0], np.cumsum(lines)[:-1]])
    linenumber = np.arange(n) - np.repeat(starts, lines) + 1
    order_day = rng.integers(0, ORDER_DAYS, orders)
    order_cust = rng.integers(0, customers, orders)
    order_priority = rng.integers(0, len(PRIORITIES), orders)
    day = order_day[order_of_line]
    cust = order_cust[order_of_line]
    part = rng.integers(0, parts, n)
    supp = rng.integers(0, suppliers, n)
    quantity = rng.integers(1, 51, n)
    discount = rng.integers(0, 11, n)
    tax = rng.integers(0, 9, n)
    extended = quantity * retail[part]
    revenue = extended * (100 - discount) // 100
    supplycost = 6 * retail[part] // 10
    charged = extended * (100 - discount) * (100 + tax) // 10_000
    total = np.add.reduceat(charged, starts)[order_of_line]
    commit = day + rng.integers(30, 91, n)

    # the date dimension, per day of the range
    first = np.datetime64(FIRST_DAY.isoformat(), "D")
    days = first + np.arange(ORDER_DAYS)
    years = days.astype("datetime64[Y]").astype(np.int64) + 1970
    months = days.astype("datetime64[M]").astype(np.int64) % 12
    day_of_year = (days - days.astype("datetime64[Y]")).astype(np.int64)
    month_names = [f"{m}{y}" for y in range(1992, 1999) for m in MONTHS]
    epoch_day = (FIRST_DAY - dt.date(1970, 1, 1)).days

    city_names = _city_names()
    nation_names = [name for name, _ in NATIONS]
    region_of = np.array([region for _, region in NATIONS])
    columns = {
        "lo_orderkey": pa.array(order_of_line + 1, pa.int64()),
        "lo_linenumber": pa.array(linenumber, pa.int8()),
        "lo_custkey": pa.array(cust + 1, pa.int32()),
        "lo_partkey": pa.array(part + 1, pa.int32()),
        "lo_suppkey": pa.array(supp + 1, pa.int32()),
        "lo_orderdate": pa.array((day + epoch_day).astype(np.int32), pa.int32()).view(pa.date32()),
        "lo_orderpriority": _strings(PRIORITIES, order_priority[order_of_line]),
        "lo_shippriority": _strings(("0",), np.zeros(n, np.int64)),
        "lo_quantity": pa.array(quantity, pa.int8()),
        "lo_extendedprice": _money(extended),
        "lo_ordtotalprice": _money(total),
        "lo_discount": pa.array(discount, pa.int8()),
        "lo_revenue": _money(revenue),
        "lo_supplycost": _money(supplycost),
        "lo_tax": pa.array(tax, pa.int8()),
        "lo_commitdate": pa.array((commit + epoch_day).astype(np.int32), pa.int32()).view(pa.date32()),
        "lo_shipmode": _strings(SHIPMODES, rng.integers(0, len(SHIPMODES), n)),
        "d_year": pa.array(years[day], pa.int16()),
        "d_yearmonthnum": pa.array(years[day] * 100 + months[day] + 1, pa.int32()),
        "d_yearmonth": _strings(month_names, (years[day] - 1992) * 12 + months[day]),
        "d_weeknuminyear": pa.array(day_of_year[day] // 7 + 1, pa.int8()),
        "c_city": _strings(city_names, c_city[cust]),
        "c_nation": _strings(nation_names, c_nation[cust]),
        "c_region": _strings(REGIONS, region_of[c_nation[cust]]),
        "c_mktsegment": _strings(SEGMENTS, c_segment[cust]),
        "s_city": _strings(city_names, s_city[supp]),
        "s_nation": _strings(nation_names, s_nation[supp]),
        "s_region": _strings(REGIONS, region_of[s_nation[supp]]),
        "p_mfgr": _strings([f"MFGR#{m}" for m in range(6)], p_mfgr[part]),
        "p_category": _strings([f"MFGR#{c}" for c in range(56)], p_category[part]),
        "p_brand1": _strings([f"MFGR#{b}" for b in range(5541)], p_brand[part]),
        "p_size": pa.array(p_size[part], pa.int8()),
    }
    return pa.table(columns, schema=SCHEMA)


# ---------------------------------------------------------------------------
# The 13 queries, against the flattened table
# ---------------------------------------------------------------------------

QUERIES: dict[str, str] = {
    "Q1.1": """
SELECT SUM(lo_extendedprice * lo_discount) AS revenue
FROM lineorder
WHERE lo_orderdate >= DATE '1993-01-01' AND lo_orderdate < DATE '1994-01-01'
  AND lo_discount BETWEEN 1 AND 3
  AND lo_quantity < 25""",
    "Q1.2": """
SELECT SUM(lo_extendedprice * lo_discount) AS revenue
FROM lineorder
WHERE lo_orderdate >= DATE '1994-01-01' AND lo_orderdate < DATE '1994-02-01'
  AND lo_discount BETWEEN 4 AND 6
  AND lo_quantity BETWEEN 26 AND 35""",
    "Q1.3": """
SELECT SUM(lo_extendedprice * lo_discount) AS revenue
FROM lineorder
WHERE d_weeknuminyear = 6
  AND lo_orderdate >= DATE '1994-01-01' AND lo_orderdate < DATE '1995-01-01'
  AND lo_discount BETWEEN 5 AND 7
  AND lo_quantity BETWEEN 26 AND 35""",
    "Q2.1": """
SELECT SUM(lo_revenue) AS revenue, d_year, p_brand1
FROM lineorder
WHERE p_category = 'MFGR#12'
  AND s_region = 'AMERICA'
GROUP BY d_year, p_brand1
ORDER BY d_year, p_brand1""",
    "Q2.2": """
SELECT SUM(lo_revenue) AS revenue, d_year, p_brand1
FROM lineorder
WHERE p_brand1 BETWEEN 'MFGR#2221' AND 'MFGR#2228'
  AND s_region = 'ASIA'
GROUP BY d_year, p_brand1
ORDER BY d_year, p_brand1""",
    "Q2.3": """
SELECT SUM(lo_revenue) AS revenue, d_year, p_brand1
FROM lineorder
WHERE p_brand1 = 'MFGR#2239'
  AND s_region = 'EUROPE'
GROUP BY d_year, p_brand1
ORDER BY d_year, p_brand1""",
    "Q3.1": """
SELECT c_nation, s_nation, d_year, SUM(lo_revenue) AS revenue
FROM lineorder
WHERE c_region = 'ASIA'
  AND s_region = 'ASIA'
  AND lo_orderdate >= DATE '1992-01-01' AND lo_orderdate < DATE '1998-01-01'
GROUP BY c_nation, s_nation, d_year
ORDER BY d_year ASC, revenue DESC""",
    "Q3.2": """
SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue
FROM lineorder
WHERE c_nation = 'UNITED STATES'
  AND s_nation = 'UNITED STATES'
  AND lo_orderdate >= DATE '1992-01-01' AND lo_orderdate < DATE '1998-01-01'
GROUP BY c_city, s_city, d_year
ORDER BY d_year ASC, revenue DESC""",
    "Q3.3": """
SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue
FROM lineorder
WHERE (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5')
  AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5')
  AND lo_orderdate >= DATE '1992-01-01' AND lo_orderdate < DATE '1998-01-01'
GROUP BY c_city, s_city, d_year
ORDER BY d_year ASC, revenue DESC""",
    "Q3.4": """
SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue
FROM lineorder
WHERE (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5')
  AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5')
  AND lo_orderdate >= DATE '1997-12-01' AND lo_orderdate < DATE '1998-01-01'
GROUP BY c_city, s_city, d_year
ORDER BY d_year ASC, revenue DESC""",
    "Q4.1": """
SELECT d_year, c_nation, SUM(lo_revenue - lo_supplycost) AS profit
FROM lineorder
WHERE c_region = 'AMERICA'
  AND s_region = 'AMERICA'
  AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2')
GROUP BY d_year, c_nation
ORDER BY d_year, c_nation""",
    "Q4.2": """
SELECT d_year, s_nation, p_category, SUM(lo_revenue - lo_supplycost) AS profit
FROM lineorder
WHERE c_region = 'AMERICA'
  AND s_region = 'AMERICA'
  AND lo_orderdate >= DATE '1997-01-01' AND lo_orderdate < DATE '1999-01-01'
  AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2')
GROUP BY d_year, s_nation, p_category
ORDER BY d_year, s_nation, p_category""",
    "Q4.3": """
SELECT d_year, s_city, p_brand1, SUM(lo_revenue - lo_supplycost) AS profit
FROM lineorder
WHERE s_nation = 'UNITED STATES'
  AND lo_orderdate >= DATE '1997-01-01' AND lo_orderdate < DATE '1999-01-01'
  AND p_category = 'MFGR#14'
GROUP BY d_year, s_city, p_brand1
ORDER BY d_year, s_city, p_brand1""",
}

# the queries with a date predicate (d_*) or a range (BETWEEN, <, >=, ...)
DATE_OR_RANGE = ("Q1.1", "Q1.2", "Q1.3", "Q2.2", "Q3.1", "Q3.2", "Q3.3", "Q3.4", "Q4.2", "Q4.3")


def history(repeat: int = 3) -> str:
    """A SQL history: the 13 queries `repeat` times (as a dashboard would run them), each
    statement multi-line and ended by ';'."""
    return "\n\n".join(f"-- {name}{QUERIES[name]};" for _ in range(repeat) for name in QUERIES) + "\n"
