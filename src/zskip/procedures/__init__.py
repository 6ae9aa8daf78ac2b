"""zskip's verbs as SQL procedures: ``CALL zskip.system.optimize(table => 'db.t', by => array('a', 'b'))``.

Each procedure is one of the Python API's verbs, with its argument names, run by the same code; this
package says which arguments each takes (SQL types), which columns its result set has, and turns a
call's arguments into the API call and its result into rows.  zskip's JVM catalog (``zskip.procedures``
in zskip's jar) asks for :func:`specs` once and hands every ``CALL`` to :func:`call`.
"""

from __future__ import annotations

from zskip.procedures.verbs import PROCEDURES, Parameter, Procedure, call, specs

__all__ = ["PROCEDURES", "Parameter", "Procedure", "call", "specs"]
