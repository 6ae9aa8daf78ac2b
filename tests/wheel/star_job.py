"""Run by test_wheel.py with the Python of a fresh virtual environment holding only zskip's wheel:
a star query with zskip enabled (spark.sql, no import of zskip in the query path), against zskip off.

Prints one line of JSON: whether the rows were equal, and what zskip's rule planned."""

from __future__ import annotations

import json
import sys

from stars import make_star

import zskip
from zskip.planning.enable import hook_counts


def main(warehouse: str) -> None:
    spark = zskip.session(warehouse=warehouse)  # zskip enabled in every query of it
    fact = make_star(spark, "lake.star")
    zskip.optimize(spark, fact, by=[zskip.Dimension("a_key", "lake.star.dim_a", key="a_id", by=["region"])])
    query = (
        "SELECT count(*) AS n, sum(f.v) AS v FROM lake.star.fact f JOIN lake.star.dim_a d ON f.a_key = d.a_id "
        "WHERE d.region = 'r2'"
    )
    enabled = spark.sql(query).collect()
    planned = hook_counts(spark)
    spark.conf.set("spark.zskip.enabled", "false")
    plain = spark.sql(query).collect()
    jar = str(
        spark.sparkContext._jvm.io.zskip.bridge.Bridge().getClass().getProtectionDomain().getCodeSource().getLocation()
    )
    print(
        json.dumps(
            {
                "equal": [tuple(r) for r in enabled] == [tuple(r) for r in plain],
                "planned": planned.planned,
                "failures": planned.failures,
                "jar": jar,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
