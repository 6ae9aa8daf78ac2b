"""The Star Schema Benchmark (O'Neil et al.) derived from TPC-H, loaded into Iceberg tables.

``lineorder`` is ``lineitem`` joined with ``orders`` (and ``partsupp`` for the supply cost) under the
SSB column mapping; ``customer``, ``supplier`` and ``part`` take SSB's city, brand and category
encodings from TPC-H's nation names and part brands; ``dates`` holds one row per day of 1992-1998.
Money columns are whole cents (BIGINT), as in SSB.  Everything is a pure function of the TPC-H
data, so a scale factor always gives the same tables.
Rows of ``lineorder`` are spread over ``files`` data files by a hash of their key, the way data
arriving from many writers overlaps in every column.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from zskip.datasets.tpch import generate_tpch

__all__ = ["SSB_QUERIES", "load_ssb"]

TPCH_TABLES = ("lineitem", "orders", "partsupp", "customer", "supplier", "part", "nation", "region")


def _views(spark: SparkSession, source: Path) -> None:
    for table in TPCH_TABLES:
        spark.read.parquet(str(source / f"{table}.parquet")).createOrReplaceTempView(f"tpch_{table}")


def _city(name_column: str, key_column: str) -> str:
    # SSB: the nation's name cut or padded to 9 characters, then a digit
    return f"concat(rpad(substr({name_column}, 1, 9), 9, ' '), CAST(pmod({key_column}, 10) AS STRING))"


def _derived(spark: SparkSession) -> dict[str, DataFrame]:
    nations = "(tpch_nation JOIN tpch_region ON n_regionkey = r_regionkey)"
    customer = spark.sql(
        f"SELECT c_custkey, c_name, c_address, {_city('n_name', 'c_custkey')} AS c_city, n_name AS c_nation, "
        f"r_name AS c_region, c_phone, c_mktsegment FROM tpch_customer JOIN {nations} ON c_nationkey = n_nationkey"
    )
    supplier = spark.sql(
        f"SELECT s_suppkey, s_name, s_address, {_city('n_name', 's_suppkey')} AS s_city, n_name AS s_nation, "
        f"r_name AS s_region, s_phone FROM tpch_supplier JOIN {nations} ON s_nationkey = n_nationkey"
    )
    part = spark.sql(
        "SELECT p_partkey, p_name, concat('MFGR#', substr(p_mfgr, -1)) AS p_mfgr, "
        "concat('MFGR#', substr(p_brand, -2)) AS p_category, "
        "concat('MFGR#', substr(p_brand, -2), CAST(pmod(p_partkey * 7, 40) + 1 AS STRING)) AS p_brand1, "
        "split(p_name, ' ')[0] AS p_color, p_type, p_size, p_container FROM tpch_part"
    )
    dates = spark.sql(
        "SELECT CAST(date_format(d, 'yyyyMMdd') AS INT) AS d_datekey, date_format(d, 'MMMM d, yyyy') AS d_date, "
        "date_format(d, 'EEEE') AS d_dayofweek, date_format(d, 'MMMM') AS d_month, year(d) AS d_year, "
        "year(d) * 100 + month(d) AS d_yearmonthnum, date_format(d, 'MMMyyyy') AS d_yearmonth, "
        "dayofweek(d) AS d_daynuminweek, dayofmonth(d) AS d_daynuminmonth, dayofyear(d) AS d_daynuminyear, "
        "month(d) AS d_monthnuminyear, weekofyear(d) AS d_weeknuminyear, "
        "CASE WHEN month(d) = 12 THEN 'Christmas' WHEN month(d) IN (6, 7, 8) THEN 'Summer' "
        "WHEN month(d) IN (3, 4, 5) THEN 'Spring' WHEN month(d) IN (9, 10, 11) THEN 'Fall' ELSE 'Winter' END "
        "AS d_sellingseason, dayofweek(d) = 7 AS d_lastdayinweekfl, d = last_day(d) AS d_lastdayinmonthfl, "
        "dayofweek(d) NOT IN (1, 7) AS d_weekdayfl "
        "FROM (SELECT explode(sequence(DATE'1992-01-01', DATE'1998-12-31')) AS d)"
    )
    lineorder = spark.sql(
        "SELECT l_orderkey AS lo_orderkey, l_linenumber AS lo_linenumber, o_custkey AS lo_custkey, "
        "l_partkey AS lo_partkey, l_suppkey AS lo_suppkey, "
        "CAST(date_format(o_orderdate, 'yyyyMMdd') AS INT) AS lo_orderdate, o_orderpriority AS lo_orderpriority, "
        "o_shippriority AS lo_shippriority, CAST(l_quantity AS INT) AS lo_quantity, "
        "CAST(l_extendedprice * 100 AS BIGINT) AS lo_extendedprice, "
        "CAST(o_totalprice * 100 AS BIGINT) AS lo_ordtotalprice, "
        "CAST(l_discount * 100 AS INT) AS lo_discount, "
        "CAST(l_extendedprice * (1 - l_discount) * 100 AS BIGINT) AS lo_revenue, "
        "CAST(ps_supplycost * 100 AS BIGINT) AS lo_supplycost, "
        "CAST(l_tax * 100 AS INT) AS lo_tax, CAST(date_format(l_commitdate, 'yyyyMMdd') AS INT) AS lo_commitdate, "
        "l_shipmode AS lo_shipmode "
        "FROM tpch_lineitem JOIN tpch_orders ON l_orderkey = o_orderkey "
        "JOIN tpch_partsupp ON l_partkey = ps_partkey AND l_suppkey = ps_suppkey"
    )
    return {"lineorder": lineorder, "dates": dates, "customer": customer, "supplier": supplier, "part": part}


def load_ssb(
    spark: SparkSession,
    namespace: str,
    *,
    scale_factor: float,
    data_dir: str | Path,
    files: int = 64,
    properties: dict[str, str] | None = None,
) -> dict[str, int]:
    """(Re)create the SSB tables in ``namespace`` (``catalog.db``); returns each table's row count.

    ``lineorder`` is written as ``files`` data files with ``properties`` (e.g. its row-group size).
    """
    from pyspark.sql import functions as F

    source = generate_tpch(data_dir, scale_factor=scale_factor, tables=TPCH_TABLES)
    _views(spark, source)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    counts = {}
    for name, frame in _derived(spark).items():
        table = f"{namespace}.{name}"
        spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
        if name == "lineorder":
            frame = frame.repartition(files, F.xxhash64("lo_orderkey", "lo_linenumber"))
        else:
            frame = frame.coalesce(1)
        writer = frame.writeTo(table).using("iceberg").tableProperty("format-version", "2")
        for key, value in (properties or {}).items() if name == "lineorder" else ():
            writer = writer.tableProperty(key, value)
        writer.create()
        counts[name] = int(spark.table(table).count())
    return counts


# The 13 SSB queries (O'Neil, O'Neil, Chen, Revilak), over tables named {ns}.lineorder, {ns}.dates, ...
SSB_QUERIES: dict[str, str] = {
    "Q1.1": "SELECT sum(lo_extendedprice * lo_discount) AS revenue FROM {ns}.lineorder JOIN {ns}.dates "
    "ON lo_orderdate = d_datekey WHERE d_year = 1993 AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25",
    "Q1.2": "SELECT sum(lo_extendedprice * lo_discount) AS revenue FROM {ns}.lineorder JOIN {ns}.dates "
    "ON lo_orderdate = d_datekey WHERE d_yearmonthnum = 199401 AND lo_discount BETWEEN 4 AND 6 "
    "AND lo_quantity BETWEEN 26 AND 35",
    "Q1.3": "SELECT sum(lo_extendedprice * lo_discount) AS revenue FROM {ns}.lineorder JOIN {ns}.dates "
    "ON lo_orderdate = d_datekey WHERE d_weeknuminyear = 6 AND d_year = 1994 AND lo_discount BETWEEN 5 AND 7 "
    "AND lo_quantity BETWEEN 26 AND 35",
    "Q2.1": "SELECT sum(lo_revenue) AS revenue, d_year, p_brand1 FROM {ns}.lineorder "
    "JOIN {ns}.dates ON lo_orderdate = d_datekey JOIN {ns}.part ON lo_partkey = p_partkey "
    "JOIN {ns}.supplier ON lo_suppkey = s_suppkey WHERE p_category = 'MFGR#12' AND s_region = 'AMERICA' "
    "GROUP BY d_year, p_brand1 ORDER BY d_year, p_brand1",
    "Q2.2": "SELECT sum(lo_revenue) AS revenue, d_year, p_brand1 FROM {ns}.lineorder "
    "JOIN {ns}.dates ON lo_orderdate = d_datekey JOIN {ns}.part ON lo_partkey = p_partkey "
    "JOIN {ns}.supplier ON lo_suppkey = s_suppkey WHERE p_brand1 BETWEEN 'MFGR#2221' AND 'MFGR#2228' "
    "AND s_region = 'ASIA' GROUP BY d_year, p_brand1 ORDER BY d_year, p_brand1",
    "Q2.3": "SELECT sum(lo_revenue) AS revenue, d_year, p_brand1 FROM {ns}.lineorder "
    "JOIN {ns}.dates ON lo_orderdate = d_datekey JOIN {ns}.part ON lo_partkey = p_partkey "
    "JOIN {ns}.supplier ON lo_suppkey = s_suppkey WHERE p_brand1 = 'MFGR#2239' AND s_region = 'EUROPE' "
    "GROUP BY d_year, p_brand1 ORDER BY d_year, p_brand1",
    "Q3.1": "SELECT c_nation, s_nation, d_year, sum(lo_revenue) AS revenue FROM {ns}.lineorder "
    "JOIN {ns}.customer ON lo_custkey = c_custkey JOIN {ns}.supplier ON lo_suppkey = s_suppkey "
    "JOIN {ns}.dates ON lo_orderdate = d_datekey WHERE c_region = 'ASIA' AND s_region = 'ASIA' "
    "AND d_year BETWEEN 1992 AND 1997 GROUP BY c_nation, s_nation, d_year ORDER BY d_year, revenue DESC",
    "Q3.2": "SELECT c_city, s_city, d_year, sum(lo_revenue) AS revenue FROM {ns}.lineorder "
    "JOIN {ns}.customer ON lo_custkey = c_custkey JOIN {ns}.supplier ON lo_suppkey = s_suppkey "
    "JOIN {ns}.dates ON lo_orderdate = d_datekey WHERE c_nation = 'UNITED STATES' AND s_nation = 'UNITED STATES' "
    "AND d_year BETWEEN 1992 AND 1997 GROUP BY c_city, s_city, d_year ORDER BY d_year, revenue DESC",
    "Q3.3": "SELECT c_city, s_city, d_year, sum(lo_revenue) AS revenue FROM {ns}.lineorder "
    "JOIN {ns}.customer ON lo_custkey = c_custkey JOIN {ns}.supplier ON lo_suppkey = s_suppkey "
    "JOIN {ns}.dates ON lo_orderdate = d_datekey WHERE c_city IN ('UNITED KI1', 'UNITED KI5') "
    "AND s_city IN ('UNITED KI1', 'UNITED KI5') AND d_year BETWEEN 1992 AND 1997 "
    "GROUP BY c_city, s_city, d_year ORDER BY d_year, revenue DESC",
    "Q3.4": "SELECT c_city, s_city, d_year, sum(lo_revenue) AS revenue FROM {ns}.lineorder "
    "JOIN {ns}.customer ON lo_custkey = c_custkey JOIN {ns}.supplier ON lo_suppkey = s_suppkey "
    "JOIN {ns}.dates ON lo_orderdate = d_datekey WHERE c_city IN ('UNITED KI1', 'UNITED KI5') "
    "AND s_city IN ('UNITED KI1', 'UNITED KI5') AND d_yearmonth = 'Dec1997' "
    "GROUP BY c_city, s_city, d_year ORDER BY d_year, revenue DESC",
    "Q4.1": "SELECT d_year, c_nation, sum(lo_revenue - lo_supplycost) AS profit FROM {ns}.lineorder "
    "JOIN {ns}.dates ON lo_orderdate = d_datekey JOIN {ns}.customer ON lo_custkey = c_custkey "
    "JOIN {ns}.supplier ON lo_suppkey = s_suppkey JOIN {ns}.part ON lo_partkey = p_partkey "
    "WHERE c_region = 'AMERICA' AND s_region = 'AMERICA' AND p_mfgr IN ('MFGR#1', 'MFGR#2') "
    "GROUP BY d_year, c_nation ORDER BY d_year, c_nation",
    "Q4.2": "SELECT d_year, s_nation, p_category, sum(lo_revenue - lo_supplycost) AS profit FROM {ns}.lineorder "
    "JOIN {ns}.dates ON lo_orderdate = d_datekey JOIN {ns}.customer ON lo_custkey = c_custkey "
    "JOIN {ns}.supplier ON lo_suppkey = s_suppkey JOIN {ns}.part ON lo_partkey = p_partkey "
    "WHERE c_region = 'AMERICA' AND s_region = 'AMERICA' AND d_year IN (1997, 1998) "
    "AND p_mfgr IN ('MFGR#1', 'MFGR#2') GROUP BY d_year, s_nation, p_category ORDER BY d_year, s_nation, p_category",
    "Q4.3": "SELECT d_year, s_city, p_brand1, sum(lo_revenue - lo_supplycost) AS profit FROM {ns}.lineorder "
    "JOIN {ns}.dates ON lo_orderdate = d_datekey JOIN {ns}.customer ON lo_custkey = c_custkey "
    "JOIN {ns}.supplier ON lo_suppkey = s_suppkey JOIN {ns}.part ON lo_partkey = p_partkey "
    "WHERE s_nation = 'UNITED STATES' AND d_year IN (1997, 1998) AND p_category = 'MFGR#14' "
    "GROUP BY d_year, s_city, p_brand1 ORDER BY d_year, s_city, p_brand1",
}
