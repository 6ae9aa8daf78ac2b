"""zskip's own files beside a table's data, in one place: the clustering store (spec and curve-key
ranges), the index manifest and its blobs, and the workload log.

Each lives under ``<table location>/zskip/`` and is named by a table property or a folder; every
one is written whole and never changed.  This package sits below ``layout``, ``indexing``,
``planning`` and ``maintenance``, which all read these files and only the first two write them.
"""
